//! The captures of a run that streams them: each tap's records go to a spool file beside its
//! capture as the core hands them over, and the capture is put together from the spool when
//! the run is over (`farlink_core::world::capture_stream` says why two passes); the spool is
//! then removed. This is the I/O half; the bytes are all the core's.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Seek, SeekFrom, Write};
use std::path::PathBuf;

use farlink_core::world::{self, CaptureStream, RunResult};
use farlink_core::Scenario;

/// One tap's spool: the file, where each sorted run starts, its length.
struct Spool {
    path: PathBuf,
    file: BufWriter<File>,
    runs: Vec<u64>,
    len: u64,
}

/// The captures of one run, by tap index.
pub struct Captures {
    /// Capture file of each tap, by name (as the caller gave them).
    by_name: BTreeMap<String, PathBuf>,
    /// By tap index, once the scenario is known.
    files: Vec<PathBuf>,
    spools: Vec<Option<Spool>>,
    done: Vec<CaptureStream>,
    /// The first error writing a spool; the run stops on it.
    failed: Option<io::Error>,
}

impl Captures {
    pub fn new(by_name: BTreeMap<String, PathBuf>) -> Captures {
        Captures {
            by_name,
            files: Vec::new(),
            spools: Vec::new(),
            done: Vec::new(),
            failed: None,
        }
    }

    /// Matches the files to the scenario's taps; every tap must have one.
    pub fn plan(&mut self, scenario: &Scenario) -> Result<(), String> {
        self.files = scenario
            .pcap()
            .iter()
            .map(|t| {
                self.by_name.get(&t.name).cloned().ok_or_else(|| {
                    format!(
                        "capture_files has no file for the scenario's tap {:?}",
                        t.name
                    )
                })
            })
            .collect::<Result<_, _>>()?;
        self.spools = self.files.iter().map(|_| None).collect();
        Ok(())
    }

    fn spool_path(capture: &std::path::Path) -> PathBuf {
        let mut name = capture.file_name().unwrap_or_default().to_os_string();
        name.push(".spool");
        capture.with_file_name(name)
    }

    /// Appends a chunk of tap `tap`'s spool entries; false (and the run stops) on an error.
    pub fn append(&mut self, tap: u32, new_run: bool, entries: &[u8]) -> bool {
        if self.failed.is_some() {
            return false;
        }
        match self.try_append(tap as usize, new_run, entries) {
            Ok(()) => true,
            Err(e) => {
                self.failed = Some(e);
                false
            }
        }
    }

    fn try_append(&mut self, tap: usize, new_run: bool, entries: &[u8]) -> io::Result<()> {
        let Some(slot) = self.spools.get_mut(tap) else {
            return Err(io::Error::other(format!("the run has no tap {tap}")));
        };
        if slot.is_none() {
            let path = Self::spool_path(&self.files[tap]);
            let file = File::create(&path)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
            *slot = Some(Spool {
                path,
                file: BufWriter::with_capacity(1 << 16, file),
                runs: Vec::new(),
                len: 0,
            });
        }
        let Some(spool) = slot.as_mut() else {
            return Ok(());
        };
        if new_run || spool.runs.is_empty() {
            spool.runs.push(spool.len);
        }
        spool.file.write_all(entries)?;
        spool.len += entries.len() as u64;
        Ok(())
    }

    pub fn done(&mut self, stream: CaptureStream) -> bool {
        self.done.push(stream);
        self.failed.is_none()
    }

    /// Writes every capture from its spool and removes the spools: (tap name, capture path,
    /// address map JSON) per tap, in the scenario's order.
    pub fn finish(mut self, result: &RunResult) -> io::Result<Vec<(String, String, String)>> {
        let outcome = self.write_all(result);
        self.remove_spools();
        if outcome.is_err() {
            // No capture half written is left behind.
            for path in &self.files {
                let _ = std::fs::remove_file(path);
            }
        }
        outcome
    }

    fn write_all(&mut self, result: &RunResult) -> io::Result<Vec<(String, String, String)>> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        let mut written = Vec::new();
        for stream in &self.done {
            let tap = stream.tap() as usize;
            let path = &self.files[tap];
            let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
            let mut runs = Vec::new();
            if let Some(spool) = self.spools[tap].as_mut() {
                spool.file.flush().map_err(named)?;
                let mut ends: Vec<u64> = spool.runs.iter().skip(1).copied().collect();
                ends.push(spool.len);
                for (&start, end) in spool.runs.iter().zip(ends) {
                    let mut f = File::open(&spool.path).map_err(named)?;
                    f.seek(SeekFrom::Start(start))?;
                    runs.push(io::Read::take(
                        BufReader::with_capacity(1 << 16, f),
                        end - start,
                    ));
                }
            }
            let out = BufWriter::with_capacity(1 << 16, File::create(path).map_err(named)?);
            world::capture_stream_assemble(stream.assembler()?, runs, out)
                .map_err(named)?
                .into_inner()
                .map_err(|e| named(e.into_error()))?;
            let map =
                world::address_map::address_map_counted(result, stream.tap(), stream.packets())
                    .and_then(|m| serde_json::to_string_pretty(&m).map_err(io::Error::other))?;
            let name = result.tap_sites[tap].name.clone();
            written.push((name, path.display().to_string(), map));
        }
        Ok(written)
    }

    /// The run failed: remove the spools, write no capture.
    pub fn discard(mut self) {
        self.remove_spools();
    }

    fn remove_spools(&mut self) {
        for spool in self.spools.iter_mut().filter_map(Option::take) {
            drop(spool.file);
            let _ = std::fs::remove_file(&spool.path);
        }
    }
}

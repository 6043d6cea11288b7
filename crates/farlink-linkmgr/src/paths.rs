//! The files the daemon makes, checked before it opens them: its event log (an SQLite
//! database, and the `-wal`, `-shm` and `-journal` files SQLite keeps beside it) and its
//! control socket, and the simulated modems' links. farlink never removes or replaces a file
//! it did not make
//! (docs/security.md): a device, a folder or a pipe where a file is meant, a file that is not
//! an SQLite database where the log is meant, anything but a socket where the control socket
//! is meant, are refused before anything is opened or removed.

use std::fs::FileType;
use std::io::{ErrorKind, Read};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// The first 16 bytes of every SQLite database file.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";
/// The files SQLite may make beside a database named `X`: `X-wal`, `X-shm`, `X-journal`.
const SQLITE_SIDE_FILES: [&str; 3] = ["-wal", "-shm", "-journal"];

/// What a file type is, in words.
fn kind(t: FileType) -> &'static str {
    if t.is_dir() {
        "a folder"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_fifo() {
        "a named pipe"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "a regular file"
    }
}

fn side_file(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The event log at `path` may be absent (the daemon makes it), empty, or an SQLite
/// database (a log the daemon resumes; a database of something else is refused by its
/// schema when opened); SQLite's side files, where present, must be regular files.
pub fn check_log(path: &Path) -> Result<(), String> {
    let shown = path.display();
    match std::fs::metadata(path) {
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{shown}: {e}")),
        Ok(m) if !m.is_file() => {
            return Err(format!(
                "{shown} is {}, not a regular file; name a new file (or a log farlink wrote)",
                kind(m.file_type())
            ))
        }
        Ok(m) if m.len() > 0 => {
            let mut head = [0u8; 16];
            let read = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head));
            if read.is_err() || &head != SQLITE_MAGIC {
                return Err(format!(
                    "{shown} exists and is not an SQLite database, so farlink did not write \
                     it; name a new file (or a log farlink wrote)"
                ));
            }
        }
        Ok(_) => {}
    }
    for suffix in SQLITE_SIDE_FILES {
        let side = side_file(path, suffix);
        if let Ok(m) = std::fs::symlink_metadata(&side) {
            if !m.is_file() {
                return Err(format!(
                    "{} is {}, where SQLite keeps a regular file beside the log; move it away",
                    side.display(),
                    kind(m.file_type())
                ));
            }
        }
    }
    Ok(())
}

/// The control socket at `path` may be absent or a socket (one a stopped daemon left is
/// replaced; whether a running one answers on it is [`mod@crate::control`]'s to check).
pub fn check_socket(path: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("{}: {e}", path.display())),
        Ok(m) if m.file_type().is_socket() => Ok(()),
        Ok(m) => Err(format!(
            "{} exists and is {}, not a socket; farlink replaces only a control socket a \
             stopped daemon left: name another path or move it away",
            path.display(),
            kind(m.file_type())
        )),
    }
}

/// Where the simulated modems put their links: a path may be absent or a symbolic link to a
/// pseudo-terminal (`/dev/pts/N`, what a simulator left, live or not), which is replaced;
/// anything else is someone else's and is refused.
pub fn check_pty_link(path: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("{}: {e}", path.display())),
        Ok(m) if m.file_type().is_symlink() => {
            let target =
                std::fs::read_link(path).map_err(|e| format!("{}: {e}", path.display()))?;
            if target.starts_with("/dev/pts") {
                Ok(())
            } else {
                Err(format!(
                    "{} is a link to {}, not to a pseudo-terminal; farlink replaces only the \
                     links a modem simulator left: name another --dir or move it away",
                    path.display(),
                    target.display()
                ))
            }
        }
        Ok(m) => Err(format!(
            "{} exists and is {}; farlink replaces only the links a modem simulator left: \
             name another --dir or move it away",
            path.display(),
            kind(m.file_type())
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("farlink-paths-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn the_log_refuses_devices_folders_and_files_of_others() {
        let d = dir("log");
        assert!(check_log(&d.join("new.sqlite")).is_ok());
        assert!(check_log(Path::new("/dev/null"))
            .unwrap_err()
            .contains("is a character device, not a regular file"));
        assert!(check_log(&d).unwrap_err().contains("is a folder"));
        let notes = d.join("notes.txt");
        std::fs::write(&notes, "my notes\n").unwrap();
        assert!(check_log(&notes)
            .unwrap_err()
            .contains("is not an SQLite database"));
        std::fs::write(&notes, "").unwrap();
        assert!(
            check_log(&notes).is_ok(),
            "an empty file holds nothing to lose"
        );
        std::fs::create_dir(d.join("notes.txt-wal")).unwrap();
        assert!(check_log(&notes)
            .unwrap_err()
            .contains("notes.txt-wal is a folder"));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn the_control_socket_replaces_only_a_socket() {
        let d = dir("sock");
        let file = d.join("keep.txt");
        std::fs::write(&file, "precious\n").unwrap();
        assert!(check_socket(&file)
            .unwrap_err()
            .contains("is a regular file, not a socket"));
        assert!(check_socket(&d).unwrap_err().contains("is a folder"));
        let sock = d.join("s.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        assert!(check_socket(&sock).is_ok());
        assert!(check_socket(&d.join("absent.sock")).is_ok());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_modem_link_replaces_only_a_link_to_a_pseudo_terminal() {
        let d = dir("pty");
        let left = d.join("air0");
        std::os::unix::fs::symlink("/dev/pts/999", &left).unwrap();
        assert!(
            check_pty_link(&left).is_ok(),
            "a link a stopped simulator left"
        );
        let mine = d.join("air1");
        std::fs::write(&mine, "precious\n").unwrap();
        assert!(check_pty_link(&mine)
            .unwrap_err()
            .contains("exists and is a regular file"));
        let elsewhere = d.join("air2");
        std::os::unix::fs::symlink(&mine, &elsewhere).unwrap();
        assert!(check_pty_link(&elsewhere)
            .unwrap_err()
            .contains("not to a pseudo-terminal"));
        assert!(check_pty_link(&d.join("air3")).is_ok());
        let _ = std::fs::remove_dir_all(&d);
    }
}

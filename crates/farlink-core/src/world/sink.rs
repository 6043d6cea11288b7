//! Where a run's traces and captures go while it runs: the front end's [`TraceSink`]. Beside the
//! world that hands them over, above the traces (`crate::trace`) and the capture streams it
//! hands.

use super::capture_stream::CaptureStream;
use crate::trace::Traces;

/// Where a run's trace rows go as it produces them, instead of staying in its [`Traces`]: the
/// front end's writer (a Parquet file per trace, row group by row group). The engine hands
/// over a table whenever it holds [`crate::trace::CHUNK_ROWS`] rows, and everything left at the end, so
/// that a run's memory for traces is bounded by the chunks whatever its length.
pub trait TraceSink {
    /// Takes the rows of `chunk` (tables with nothing to hand over are empty), in the order
    /// they were recorded: a table's chunks, concatenated, are the table a run without a sink
    /// would hold. Returns `false` when the rows could not be kept (the run then stops).
    fn rows(&mut self, chunk: Traces) -> bool;

    /// Whether the sink takes the taps' captures too; if not, the taps stay in the result.
    fn takes_captures(&self) -> bool {
        false
    }

    /// Spool entries of tap `tap` ([`CaptureStream::encode`]); `new_run`: they
    /// begin a new sorted run at the spool's end rather than continue the last one.
    fn capture(&mut self, tap: u32, new_run: bool, entries: &[u8]) -> bool {
        let _ = (tap, new_run, entries);
        true
    }

    /// The run is over: tap `stream.tap()`'s capture can be put together from its spool.
    fn capture_done(&mut self, stream: CaptureStream) -> bool {
        let _ = stream;
        true
    }
}

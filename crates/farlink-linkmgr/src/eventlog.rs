//! The daemon's event log: one SQLite database in WAL mode, one transaction per event, in the
//! schema `docs/linkmgr.md` gives (the contract with its readers). An event is on disk when
//! [`EventLog::event`] returns, so a daemon killed at any instant loses none already logged,
//! and readers see the log grow while the daemon writes.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use farlink_core::modem::SupervisorSnapshot;
use rusqlite::{params, Connection, OptionalExtension};

/// The `schema_version` this writer writes.
pub const SCHEMA_VERSION: &str = "1";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY,
    t_unix_s REAL NOT NULL,
    t_daemon_s REAL NOT NULL,
    modem INTEGER,
    kind TEXT NOT NULL,
    state TEXT,
    value REAL,
    detail TEXT
);
CREATE INDEX IF NOT EXISTS events_kind ON events (kind, modem, id);
CREATE TABLE IF NOT EXISTS snapshots (
    id INTEGER PRIMARY KEY,
    t_unix_s REAL NOT NULL,
    json TEXT NOT NULL
);
";

/// One event (a row of `events`; see `docs/linkmgr.md` for each kind's fields).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Event<'a> {
    pub modem: Option<u32>,
    pub kind: &'a str,
    pub state: Option<&'a str>,
    pub value: Option<f64>,
    pub detail: Option<&'a str>,
}

impl<'a> Event<'a> {
    pub fn new(kind: &'a str) -> Self {
        Event {
            kind,
            ..Event::default()
        }
    }
    pub fn modem(mut self, m: u32) -> Self {
        self.modem = Some(m);
        self
    }
    pub fn state(mut self, s: &'a str) -> Self {
        self.state = Some(s);
        self
    }
    pub fn value(mut self, v: f64) -> Self {
        self.value = Some(v);
        self
    }
    pub fn detail(mut self, d: &'a str) -> Self {
        self.detail = Some(d);
        self
    }
}

fn unix_now_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The open log.
pub struct EventLog {
    db: Connection,
}

impl std::fmt::Debug for EventLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EventLog")
    }
}

fn sql_err(what: &str, e: rusqlite::Error) -> String {
    format!("event log: {what}: {e}")
}

impl EventLog {
    /// Opens (or creates) the log at `path` and records who writes it. Returns the log and
    /// the last snapshot in it, if any (a restart resumes from it), with the wall-clock time
    /// (s since 1970) at which the daemon that wrote it started its clock.
    pub fn open(
        path: &Path,
        role: &str,
        member_names: &[String],
        config_json: &str,
    ) -> Result<(EventLog, Option<(SupervisorSnapshot, f64)>), String> {
        // Before SQLite opens it (and makes its journal beside it): a device, a folder or a
        // file of someone else's is refused untouched.
        super::paths::check_log(path).map_err(|e| format!("event log: {e}"))?;
        let db = Connection::open(path)
            .map_err(|e| format!("cannot open the event log {}: {e}", path.display()))?;
        // A reader holding the log (the dashboard) must not make a write fail at once.
        db.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(|e| sql_err("busy timeout", e))?;
        let mode: String = db
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .map_err(|e| sql_err(&format!("{} is not an SQLite database", path.display()), e))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(format!(
                "event log {}: the file system does not allow WAL mode (got {mode})",
                path.display()
            ));
        }
        // WAL with NORMAL: a transaction committed survives the process being killed (not a
        // power cut); FULL would fsync every event.
        db.execute_batch("PRAGMA synchronous=NORMAL;")
            .map_err(|e| sql_err("pragma", e))?;
        db.execute_batch(SCHEMA).map_err(|e| sql_err("schema", e))?;
        if let Some(v) = db
            .query_row(
                "SELECT value FROM meta WHERE key = 'schema_version'",
                [],
                |r| r.get::<_, String>(0),
            )
            .optional()
            .map_err(|e| sql_err("meta", e))?
        {
            if v != SCHEMA_VERSION {
                return Err(format!(
                    "event log {}: schema version {v}, this daemon writes {SCHEMA_VERSION}",
                    path.display()
                ));
            }
        }
        let mut log = EventLog { db };
        let modems = serde_json::to_string(member_names).unwrap_or_else(|_| "[]".into());
        let started = format!("{}", unix_now_s());
        log.tx(|db| {
            let mut put = db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)")?;
            put.execute(params!["schema_version", SCHEMA_VERSION])?;
            put.execute(params!["role", role])?;
            put.execute(params!["modems", modems])?;
            put.execute(params!["config", config_json])?;
            db.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('started_unix_s', ?1)",
                params![started],
            )?;
            Ok(())
        })
        .map_err(|e| sql_err("meta", e))?;
        // Every event carries both clocks: their difference is when its daemon started.
        let epoch: Option<f64> = log
            .db
            .query_row(
                "SELECT t_unix_s - t_daemon_s FROM events ORDER BY id DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| sql_err("events", e))?;
        let snap: Option<String> = log
            .db
            .query_row(
                "SELECT json FROM snapshots ORDER BY id DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| sql_err("snapshots", e))?;
        let snap = match snap {
            Some(j) => Some((
                serde_json::from_str(&j).map_err(|e| {
                    format!("event log {}: unreadable snapshot: {e}", path.display())
                })?,
                epoch.unwrap_or_else(unix_now_s),
            )),
            None => None,
        };
        Ok((log, snap))
    }

    fn tx(
        &mut self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<()>,
    ) -> rusqlite::Result<()> {
        let tx = self.db.transaction()?;
        f(&tx)?;
        tx.commit()
    }

    /// Writes one event at daemon time `t_daemon_s`, in its own transaction.
    pub fn event(&mut self, t_daemon_s: f64, e: &Event<'_>) -> Result<(), String> {
        let t = unix_now_s();
        self.tx(|db| {
            db.execute(
                "INSERT INTO events (t_unix_s, t_daemon_s, modem, kind, state, value, detail) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![t, t_daemon_s, e.modem, e.kind, e.state, e.value, e.detail],
            )?;
            Ok(())
        })
        .map_err(|err| sql_err(&format!("writing a {} event", e.kind), err))
    }

    /// Writes the supervisor's state to resume from.
    pub fn snapshot(&mut self, snap: &SupervisorSnapshot) -> Result<(), String> {
        let json = serde_json::to_string(snap).map_err(|e| e.to_string())?;
        let t = unix_now_s();
        self.tx(|db| {
            db.execute(
                "INSERT INTO snapshots (t_unix_s, json) VALUES (?1, ?2)",
                params![t, json],
            )?;
            // Only the last one is ever read: keep the table small on a long run.
            db.execute(
                "DELETE FROM snapshots WHERE id < (SELECT MAX(id) FROM snapshots) - 100",
                [],
            )?;
            Ok(())
        })
        .map_err(|e| sql_err("writing a snapshot", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use farlink_core::modem::{Supervisor, SupervisorConfig};
    use farlink_core::time::SimTime;

    #[test]
    fn events_and_the_last_snapshot_survive_a_reopen() {
        let dir = std::env::temp_dir().join(format!("farlink-eventlog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("log.sqlite");
        let _ = std::fs::remove_file(&path);
        let names = vec!["a".to_string(), "b".to_string()];
        let (mut log, snap) = EventLog::open(&path, "air", &names, "{}").unwrap();
        assert!(snap.is_none());
        log.event(0.0, &Event::new("daemon").detail("start"))
            .unwrap();
        log.event(1.5, &Event::new("state").modem(1).state("connecting"))
            .unwrap();
        let cfg = SupervisorConfig {
            members: 2,
            modem: Default::default(),
            primary: true,
            start_connected: false,
        };
        let s = Supervisor::new(cfg, SimTime::ZERO).unwrap();
        log.snapshot(&s.snapshot()).unwrap();
        drop(log);
        let (_log, snap) = EventLog::open(&path, "air", &names, "{}").unwrap();
        let (snap, epoch) = snap.unwrap();
        assert_eq!(snap, s.snapshot());
        assert!((epoch - unix_now_s()).abs() < 60.0);
        let db = Connection::open(&path).unwrap();
        let rows: Vec<(Option<u32>, String, Option<String>)> = db
            .prepare("SELECT modem, kind, coalesce(state, detail) FROM events ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(
            rows,
            vec![
                (None, "daemon".into(), Some("start".into())),
                (Some(1), "state".into(), Some("connecting".into()))
            ]
        );
        let modems: String = db
            .query_row("SELECT value FROM meta WHERE key='modems'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(modems, r#"["a","b"]"#);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

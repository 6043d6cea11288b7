//! The link manager's configuration file (TOML), read with every error placed:
//! `FILE:LINE: path: message`, like a scenario's. The schema is in `docs/linkmgr.md`.
//!
//! Relative paths (devices, the log) are taken from the directory of the file, so a
//! configuration means the same wherever the daemon is started from.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::ppp::at::ModemProfile;
use farlink_core::modem::ModemConfig;
use farlink_core::time::SimDuration;
use farlink_core::units;
use serde_json::json;
use toml_edit::{ImDocument, Item, Table, Value};

/// Which end of the calls this daemon is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Dials its members (the field camp's end).
    Air,
    /// Answers the calls that come in (the ground station's end).
    Ground,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Air => "air",
            Role::Ground => "ground",
        }
    }
}

/// One member: a modem on a serial port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberConfig {
    pub name: String,
    pub device: PathBuf,
}

/// An Iridium call's data rate (seed 000 section 3: 2400 bit/s per modem).
pub const DEFAULT_MEMBER_RATE_BPS: u64 = 2400;

/// The data plane's TUN device (optional: without it the daemon supervises and logs only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TunConfig {
    pub name: String,
    /// Local address with prefix length (`10.77.0.1/30`).
    pub address: String,
    /// The far end's address.
    pub peer: String,
    /// Each member's line rate once its call is up (the air interface: Iridium's 2400 bit/s),
    /// which the bundle cuts packets by and sizes its staleness timer to.
    pub member_rate_bps: u64,
}

/// A read and checked configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkMgrConfig {
    pub role: Role,
    pub members: Vec<MemberConfig>,
    /// The modem profile (`iridium` with the file's overrides).
    pub profile: ModemProfile,
    /// Hardware flow control (RTS/CTS) on the ports that support it.
    pub flow_control: bool,
    /// The supervisor's timers (Figure 7.2) and its attempt bound.
    pub timers: ModemConfig,
    /// KUMICS's primary modem (air only).
    pub primary: bool,
    pub log: PathBuf,
    pub tun: Option<TunConfig>,
    /// The Unix socket the daemon takes operators' commands on (`hold`, `release`).
    pub control: Option<PathBuf>,
    /// The dashboard the daemon serves (started beside it by `farlink linkmgr run`).
    pub dashboard: Option<DashboardConfig>,
}

/// The `[dashboard]` table: where the daemon's process serves the dashboard of its log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DashboardConfig {
    /// `HOST:PORT`, an IPv4 or IPv6 address.
    pub listen: String,
    /// Every request must carry it; required off loopback.
    pub token: Option<String>,
}

impl LinkMgrConfig {
    /// The resolved configuration as JSON, for the log's `meta` table.
    pub fn to_json(&self) -> serde_json::Value {
        let s = |d: SimDuration| d.as_secs_f64();
        json!({
            "role": self.role.name(),
            "members": self.members.iter().map(|m| json!({
                "name": m.name, "device": m.device.display().to_string()
            })).collect::<Vec<_>>(),
            "profile": {
                "baud": self.profile.baud,
                "init": self.profile.init,
                "number": self.profile.number,
                "signal_command": self.profile.signal_command,
                "command_timeout_s": s(self.profile.command_timeout),
                "signal_timeout_s": s(self.profile.signal_timeout),
                "signal_interval_s": s(self.profile.signal_interval),
                "handover_reply_s": s(self.profile.handover_reply),
                "dial_timeout_s": s(self.profile.dial_timeout),
                "guard_time_s": s(self.profile.guard_time),
                "flow_control": self.flow_control,
            },
            "timers": {
                "t_d_s": s(self.timers.t_d),
                "t_f_s": s(self.timers.t_f),
                "max_attempts": self.timers.max_attempts,
                "blocked_for_s": s(self.timers.blocked_for),
            },
            "primary": self.primary,
            "log": self.log.display().to_string(),
            "control": self.control.as_ref().map(|c| c.display().to_string()),
            "dashboard": self.dashboard.as_ref().map(|d| json!({
                "listen": d.listen, "token": d.token,
            })),
            "tun": self.tun.as_ref().map(|t| json!({
                "name": t.name, "address": t.address, "peer": t.peer,
                "member_rate_bps": t.member_rate_bps,
            })),
        })
    }
}

/// A configuration that cannot be used, placed in its file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub file: String,
    pub line: Option<usize>,
    /// The field (`members[2].device`), empty for the file as a whole.
    pub path: String,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        if !self.path.is_empty() {
            write!(f, ": {}", self.path)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ConfigError {}

/// Reads the configuration file at `path`.
pub fn load(path: &Path) -> Result<LinkMgrConfig, ConfigError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
        file: file.clone(),
        line: None,
        path: String::new(),
        message: format!("cannot read it: {e}"),
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    parse(&file, &text, base)
}

/// Reads a configuration from `text` (named `file` in errors); relative paths are taken
/// from `base`.
pub fn parse(file: &str, text: &str, base: &Path) -> Result<LinkMgrConfig, ConfigError> {
    let r = Reader { file, text };
    let doc = ImDocument::parse(text).map_err(|e| ConfigError {
        file: file.into(),
        line: e.span().map(|s| r.line(s.start)),
        path: String::new(),
        message: format!("not TOML: {}", e.message()),
    })?;
    let root = doc.as_table();
    r.known(
        root,
        "",
        &[
            "role",
            "log",
            "primary",
            "members",
            "profile",
            "timers",
            "tun",
            "control",
            "dashboard",
        ],
    )?;
    let role = match r.opt_str(root, "", "role")?.as_deref() {
        None | Some("air") => Role::Air,
        Some("ground") => Role::Ground,
        Some(other) => {
            return Err(r.at_value(
                root,
                "",
                "role",
                format!("expected \"air\" or \"ground\", got {other:?}"),
            ));
        }
    };
    let primary = r.opt_bool(root, "", "primary")?.unwrap_or(false);
    if primary && role == Role::Ground {
        return Err(r.at_value(
            root,
            "",
            "primary",
            "the ground end answers calls; only the air end (which dials) has a primary modem"
                .into(),
        ));
    }
    let log = match r.opt_str(root, "", "log")? {
        Some(l) if !l.is_empty() => {
            let log = base.join(l);
            super::paths::check_log(&log).map_err(|e| r.at_value(root, "", "log", e))?;
            log
        }
        Some(_) => {
            return Err(r.at_value(root, "", "log", "expected a file path, got \"\"".into()))
        }
        None => return Err(r.missing(root, "", "log", "the event log's path (an SQLite file)")),
    };
    let members = r.members(root, base)?;
    let (profile, flow_control) = r.profile(root)?;
    let timers = r.timers(root)?;
    let tun = r.tun(root)?;
    let control = match r.opt_str(root, "", "control")? {
        Some(c) if !c.is_empty() && base.join(&c).as_os_str().len() < UNIX_PATH_MAX => {
            let control = base.join(c);
            super::paths::check_socket(&control).map_err(|e| r.at_value(root, "", "control", e))?;
            Some(control)
        }
        Some(_) => {
            return Err(r.at_value(
                root,
                "",
                "control",
                format!("expected a socket path of 1 to {} bytes", UNIX_PATH_MAX - 1),
            ))
        }
        None => None,
    };
    let dashboard = r.dashboard(root)?;
    Ok(LinkMgrConfig {
        role,
        members,
        profile,
        flow_control,
        timers,
        primary,
        log,
        tun,
        control,
        dashboard,
    })
}

/// A Unix socket's path, its terminating NUL included, fits in `sun_path` (108 on Linux).
const UNIX_PATH_MAX: usize = 108;

struct Reader<'a> {
    file: &'a str,
    text: &'a str,
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

impl Reader<'_> {
    fn line(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())]
            .matches('\n')
            .count()
            + 1
    }

    fn err(&self, offset: Option<usize>, path: String, message: String) -> ConfigError {
        ConfigError {
            file: self.file.into(),
            line: offset.map(|o| self.line(o)),
            path,
            message,
        }
    }

    /// An error at the value of `key` in `t` (at its key if the value has no span).
    fn at_value(&self, t: &Table, prefix: &str, key: &str, message: String) -> ConfigError {
        let offset = t.get_key_value(key).and_then(|(k, item)| {
            item.span()
                .or_else(|| item.as_value().and_then(Value::span))
                .or_else(|| k.span())
                .map(|s| s.start)
        });
        self.err(
            offset.or(t.span().map(|s| s.start)),
            join(prefix, key),
            message,
        )
    }

    fn missing(&self, t: &Table, prefix: &str, key: &str, what: &str) -> ConfigError {
        self.err(
            t.span().map(|s| s.start),
            join(prefix, key),
            format!("missing: expected {what}"),
        )
    }

    /// Refuses keys of `t` not in `allowed`.
    fn known(&self, t: &Table, prefix: &str, allowed: &[&str]) -> Result<(), ConfigError> {
        for (k, _) in t.iter() {
            if !allowed.contains(&k) {
                let offset = t.key(k).and_then(|key| key.span()).map(|s| s.start);
                return Err(self.err(
                    offset,
                    join(prefix, k),
                    format!("unknown field; expected one of: {}", allowed.join(", ")),
                ));
            }
        }
        Ok(())
    }

    fn value<'t>(&self, t: &'t Table, key: &str) -> Option<&'t Value> {
        t.get(key).and_then(Item::as_value)
    }

    fn opt_str(&self, t: &Table, prefix: &str, key: &str) -> Result<Option<String>, ConfigError> {
        match t.get(key) {
            None => Ok(None),
            Some(item) => match item.as_str() {
                Some(s) => Ok(Some(s.to_string())),
                None => Err(self.at_value(t, prefix, key, "expected a string".into())),
            },
        }
    }

    fn opt_bool(&self, t: &Table, prefix: &str, key: &str) -> Result<Option<bool>, ConfigError> {
        match t.get(key) {
            None => Ok(None),
            Some(item) => match item.as_bool() {
                Some(b) => Ok(Some(b)),
                None => Err(self.at_value(t, prefix, key, "expected true or false".into())),
            },
        }
    }

    fn opt_count(
        &self,
        t: &Table,
        prefix: &str,
        key: &str,
        min: i64,
        max: i64,
    ) -> Result<Option<i64>, ConfigError> {
        match t.get(key) {
            None => Ok(None),
            Some(item) => match item.as_integer() {
                Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
                _ => Err(self.at_value(
                    t,
                    prefix,
                    key,
                    format!("expected a whole number from {min} to {max}"),
                )),
            },
        }
    }

    /// A duration: a string with a unit (`30s`, `1h`, `250ms`) or a number of seconds.
    fn opt_duration(
        &self,
        t: &Table,
        prefix: &str,
        key: &str,
        allow_zero: bool,
    ) -> Result<Option<SimDuration>, ConfigError> {
        let Some(v) = self.value(t, key) else {
            if t.contains_key(key) {
                return Err(self.at_value(t, prefix, key, "expected a duration".into()));
            }
            return Ok(None);
        };
        let secs = match v {
            Value::String(s) => units::parse_duration_s(s.value(), allow_zero)
                .map_err(|e| self.at_value(t, prefix, key, e.to_string()))?,
            Value::Integer(n) => *n.value() as f64,
            Value::Float(x) => *x.value(),
            _ => {
                return Err(self.at_value(
                    t,
                    prefix,
                    key,
                    "expected a duration such as \"30s\", \"250ms\" or \"1h\"".into(),
                ))
            }
        };
        if !secs.is_finite() || secs < 0.0 || (secs == 0.0 && !allow_zero) || secs > 1e7 {
            return Err(self.at_value(
                t,
                prefix,
                key,
                format!(
                    "expected a duration {} and at most 10^7 s, got {secs} s",
                    if allow_zero {
                        "of 0 or more"
                    } else {
                        "above 0"
                    }
                ),
            ));
        }
        Ok(Some(SimDuration::from_secs_f64(secs)))
    }

    fn table<'t>(&self, root: &'t Table, key: &str) -> Result<Option<&'t Table>, ConfigError> {
        match root.get(key) {
            None => Ok(None),
            Some(Item::Table(t)) => Ok(Some(t)),
            Some(_) => Err(self.at_value(root, "", key, format!("expected a table [{key}]"))),
        }
    }

    fn members(&self, root: &Table, base: &Path) -> Result<Vec<MemberConfig>, ConfigError> {
        let Some(item) = root.get("members") else {
            return Err(self.missing(root, "", "members", "one [[members]] table per modem"));
        };
        let Some(array) = item.as_array_of_tables() else {
            return Err(self.at_value(
                root,
                "",
                "members",
                "expected [[members]] tables, each with a name and a device".into(),
            ));
        };
        if array.is_empty() || array.len() > 64 {
            return Err(self.at_value(root, "", "members", "expected 1 to 64 members".into()));
        }
        let mut out: Vec<MemberConfig> = Vec::with_capacity(array.len());
        for (i, t) in array.iter().enumerate() {
            let prefix = format!("members[{i}]");
            self.known(t, &prefix, &["name", "device"])?;
            let device = match self.opt_str(t, &prefix, "device")? {
                Some(d) if !d.is_empty() => base.join(d),
                _ => {
                    return Err(self.missing(
                        t,
                        &prefix,
                        "device",
                        "the modem's serial device path",
                    ))
                }
            };
            let name = self
                .opt_str(t, &prefix, "name")?
                .unwrap_or_else(|| format!("modem{i}"));
            let valid = !name.is_empty()
                && name.len() <= 32
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
            if !valid {
                return Err(self.at_value(
                    t,
                    &prefix,
                    "name",
                    "expected 1 to 32 letters, digits, '-', '_' or '.'".into(),
                ));
            }
            if let Some(j) = out.iter().position(|m| m.name == name) {
                return Err(self.at_value(
                    t,
                    &prefix,
                    "name",
                    format!("{name:?} is already the name of members[{j}]"),
                ));
            }
            if let Some(j) = out.iter().position(|m| m.device == device) {
                return Err(self.at_value(
                    t,
                    &prefix,
                    "device",
                    format!("{} is already the device of members[{j}]", device.display()),
                ));
            }
            out.push(MemberConfig { name, device });
        }
        Ok(out)
    }

    fn profile(&self, root: &Table) -> Result<(ModemProfile, bool), ConfigError> {
        let mut p = ModemProfile::iridium();
        let Some(t) = self.table(root, "profile")? else {
            return Ok((p, true));
        };
        let pre = "profile";
        self.known(
            t,
            pre,
            &[
                "name",
                "baud",
                "init",
                "number",
                "signal_command",
                "command_timeout",
                "signal_timeout",
                "signal_interval",
                "handover_reply",
                "dial_timeout",
                "guard_time",
                "flow_control",
            ],
        )?;
        if let Some(name) = self.opt_str(t, pre, "name")? {
            if name != "iridium" {
                return Err(self.at_value(
                    t,
                    pre,
                    "name",
                    format!("unknown modem profile {name:?}; expected \"iridium\""),
                ));
            }
        }
        if let Some(b) = self.profile_baud(t)? {
            p.baud = b;
        }
        if let Some(init) = self.profile_init(t)? {
            p.init = init;
        }
        if let Some(n) = self.opt_str(t, pre, "number")? {
            if n.is_empty()
                || n.len() > 40
                || !n.chars().all(|c| c.is_ascii_digit() || "+*#".contains(c))
            {
                return Err(self.at_value(
                    t,
                    pre,
                    "number",
                    "expected the number to dial: digits, '+', '*' or '#'".into(),
                ));
            }
            p.number = n;
        }
        if let Some(c) = self.opt_str(t, pre, "signal_command")? {
            if !matches!(c.as_str(), "AT+CSQ" | "AT+CSQF") {
                return Err(self.at_value(
                    t,
                    pre,
                    "signal_command",
                    "expected \"AT+CSQ\" or \"AT+CSQF\"".into(),
                ));
            }
            p.signal_command = c;
        }
        for (key, field, zero) in [
            ("command_timeout", &mut p.command_timeout, false),
            ("signal_timeout", &mut p.signal_timeout, false),
            ("signal_interval", &mut p.signal_interval, true),
            ("handover_reply", &mut p.handover_reply, false),
            ("dial_timeout", &mut p.dial_timeout, false),
            ("guard_time", &mut p.guard_time, false),
        ] {
            if let Some(d) = self.opt_duration(t, pre, key, zero)? {
                *field = d;
            }
        }
        if p.handover_reply >= p.signal_timeout {
            return Err(self.at_value(
                t,
                pre,
                "handover_reply",
                "must be shorter than signal_timeout, or no late reply could be seen".into(),
            ));
        }
        let flow = self.opt_bool(t, pre, "flow_control")?.unwrap_or(true);
        Ok((p, flow))
    }

    /// `profile.baud`: a rate the serial port can be set to.
    fn profile_baud(&self, t: &Table) -> Result<Option<u32>, ConfigError> {
        let Some(b) = self.opt_count(t, "profile", "baud", 1, 4_000_000)? else {
            return Ok(None);
        };
        if super::serial::baud_constant(b as u32).is_none() {
            return Err(self.at_value(
                t,
                "profile",
                "baud",
                format!(
                    "{b} is not a standard serial rate; expected one of {}",
                    super::serial::STANDARD_BAUDS
                        .iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        Ok(Some(b as u32))
    }

    /// `profile.init`: the AT commands sent before each dial, each checked.
    fn profile_init(&self, t: &Table) -> Result<Option<Vec<String>>, ConfigError> {
        let Some(item) = t.get("init") else {
            return Ok(None);
        };
        let Some(a) = item.as_array() else {
            return Err(self.at_value(
                t,
                "profile",
                "init",
                "expected a list of AT commands".into(),
            ));
        };
        let mut init = Vec::with_capacity(a.len());
        for (i, v) in a.iter().enumerate() {
            match v.as_str() {
                Some(c) if is_at_command(c) => init.push(c.to_string()),
                _ => {
                    return Err(self.err(
                        v.span().map(|s| s.start),
                        format!("profile.init[{i}]"),
                        "expected an AT command (\"AT...\", printable, at most 100 characters)"
                            .into(),
                    ))
                }
            }
        }
        Ok(Some(init))
    }

    fn timers(&self, root: &Table) -> Result<ModemConfig, ConfigError> {
        let mut m = ModemConfig::default();
        let Some(t) = self.table(root, "timers")? else {
            return Ok(m);
        };
        let pre = "timers";
        self.known(t, pre, &["t_d", "t_f", "max_attempts", "blocked_for"])?;
        for (key, field) in [
            ("t_d", &mut m.t_d),
            ("t_f", &mut m.t_f),
            ("blocked_for", &mut m.blocked_for),
        ] {
            if let Some(d) = self.opt_duration(t, pre, key, true)? {
                *field = d;
            }
        }
        if let Some(n) = self.opt_count(t, pre, "max_attempts", 0, 1_000_000)? {
            m.max_attempts = n as u32;
        }
        Ok(m)
    }

    /// The `[dashboard]` table: `listen` (`HOST:PORT`, default `127.0.0.1:8750`) and `token`.
    /// The dashboard is Python's (`farlink linkmgr run` starts it), which checks the address
    /// and the token's rule (any address but loopback needs one) as `farlink linkmgr
    /// dashboard` does.
    fn dashboard(&self, root: &Table) -> Result<Option<DashboardConfig>, ConfigError> {
        let Some(t) = self.table(root, "dashboard")? else {
            return Ok(None);
        };
        let pre = "dashboard";
        self.known(t, pre, &["listen", "token"])?;
        let listen = self
            .opt_str(t, pre, "listen")?
            .unwrap_or_else(|| "127.0.0.1:8750".into());
        if listen.is_empty() {
            return Err(self.at_value(t, pre, "listen", "expected ADDRESS:PORT".into()));
        }
        let token = self.opt_str(t, pre, "token")?;
        if token.as_deref() == Some("") {
            return Err(self.at_value(t, pre, "token", "expected a non-empty token".into()));
        }
        Ok(Some(DashboardConfig { listen, token }))
    }

    fn tun(&self, root: &Table) -> Result<Option<TunConfig>, ConfigError> {
        let Some(t) = self.table(root, "tun")? else {
            return Ok(None);
        };
        let pre = "tun";
        self.known(t, pre, &["name", "address", "peer", "member_rate"])?;
        let name = self
            .opt_str(t, pre, "name")?
            .unwrap_or_else(|| "farlink0".into());
        if name.is_empty() || name.len() > 15 {
            return Err(self.at_value(
                t,
                pre,
                "name",
                "expected an interface name of 1 to 15 characters".into(),
            ));
        }
        let address = match self.opt_str(t, pre, "address")? {
            Some(a) if valid_cidr(&a) => a,
            Some(_) => {
                return Err(self.at_value(
                    t,
                    pre,
                    "address",
                    "expected an IPv4 address with its prefix length, such as \"10.77.0.1/30\""
                        .into(),
                ))
            }
            None => {
                return Err(self.missing(
                    t,
                    pre,
                    "address",
                    "the local address with its prefix length",
                ))
            }
        };
        let peer = match self.opt_str(t, pre, "peer")? {
            Some(a) if a.parse::<std::net::Ipv4Addr>().is_ok() => a,
            Some(_) => {
                return Err(self.at_value(t, pre, "peer", "expected an IPv4 address".into()))
            }
            None => return Err(self.missing(t, pre, "peer", "the far end's address")),
        };
        let member_rate_bps = match self.opt_str(t, pre, "member_rate")? {
            None => DEFAULT_MEMBER_RATE_BPS,
            Some(text) => match units::parse_bitrate_bps(&text) {
                Ok(bps) if (1.0..=1e9).contains(&bps) => bps.round() as u64,
                Ok(bps) => {
                    return Err(self.at_value(
                        t,
                        pre,
                        "member_rate",
                        format!("expected 1 bit/s to 1 Gbit/s, got {bps} bit/s"),
                    ))
                }
                Err(e) => return Err(self.at_value(t, pre, "member_rate", e.to_string())),
            },
        };
        Ok(Some(TunConfig {
            name,
            address,
            peer,
            member_rate_bps,
        }))
    }
}

fn is_at_command(c: &str) -> bool {
    c.len() >= 2
        && c.len() <= 100
        && c[..2].eq_ignore_ascii_case("AT")
        && c.chars().all(|ch| ch.is_ascii_graphic() || ch == ' ')
}

fn valid_cidr(s: &str) -> bool {
    let Some((a, p)) = s.split_once('/') else {
        return false;
    };
    a.parse::<std::net::Ipv4Addr>().is_ok() && p.parse::<u8>().is_ok_and(|p| p <= 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"role = "air"
log = "events.sqlite"
primary = true

[[members]]
name = "alaska"
device = "/dev/ttyUSB0"

[[members]]
device = "pty/air1"

[profile]
init = ["ATE0V1Q0", "AT&K3"]
signal_interval = "2s"

[timers]
t_d = "1s"
max_attempts = 3
blocked_for = "10min"
"#;

    fn err(text: &str) -> String {
        parse("cfg.toml", text, Path::new("/etc/farlink"))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn reads_members_profile_overrides_and_timers() {
        let c = parse("cfg.toml", GOOD, Path::new("/etc/farlink")).unwrap();
        assert_eq!(c.role, Role::Air);
        assert!(c.primary);
        assert_eq!(c.log, PathBuf::from("/etc/farlink/events.sqlite"));
        assert_eq!(c.members[0].name, "alaska");
        assert_eq!(c.members[1].name, "modem1");
        assert_eq!(c.members[1].device, PathBuf::from("/etc/farlink/pty/air1"));
        // Overridden, and the rest of the iridium profile kept.
        assert_eq!(c.profile.init, ["ATE0V1Q0", "AT&K3"]);
        assert_eq!(c.profile.signal_interval, SimDuration::from_secs(2));
        assert_eq!(c.profile.number, "008816000025");
        assert_eq!(c.profile.baud, 9600);
        assert!(c.flow_control);
        assert_eq!(c.timers.t_d, SimDuration::from_secs(1));
        assert_eq!(c.timers.t_f, SimDuration::from_secs(30));
        assert_eq!(c.timers.max_attempts, 3);
        assert_eq!(c.timers.blocked_for, SimDuration::from_secs(600));
        assert!(c.tun.is_none());
        assert_eq!(c.to_json()["timers"]["t_d_s"], 1.0);
    }

    #[test]
    fn errors_name_the_file_the_line_and_the_field() {
        assert_eq!(
            err(&GOOD.replace("t_d = \"1s\"", "t_d = \"1 fortnight\"")),
            "cfg.toml:17: timers.t_d: unknown time unit 'fortnight' in '1 fortnight': expected \
             a duration such as 19s, 250ms, 50min, 1.5h or 19 (seconds)"
        );
        assert_eq!(
            err(&GOOD.replace("device = \"pty/air1\"", "devise = \"pty/air1\"")),
            "cfg.toml:10: members[1].devise: unknown field; expected one of: name, device"
        );
        assert_eq!(
            err(&GOOD.replace("role = \"air\"", "role = \"sea\"")),
            "cfg.toml:1: role: expected \"air\" or \"ground\", got \"sea\""
        );
        assert_eq!(
            err(&GOOD.replace("role = \"air\"", "role = \"ground\"")),
            "cfg.toml:3: primary: the ground end answers calls; only the air end (which dials) \
             has a primary modem"
        );
        assert_eq!(
            err(&GOOD.replace("max_attempts = 3", "max_attempts = -1")),
            "cfg.toml:18: timers.max_attempts: expected a whole number from 0 to 1000000"
        );
        assert_eq!(
            err(&GOOD.replace("\"AT&K3\"", "\"&K3\"")),
            "cfg.toml:13: profile.init[1]: expected an AT command (\"AT...\", printable, at \
             most 100 characters)"
        );
        assert_eq!(
            err(&GOOD.replace("name = \"alaska\"", "name = \"modem1\"")),
            "cfg.toml:9: members[1].name: \"modem1\" is already the name of members[0]"
        );
        assert!(err("log = \"x\"").starts_with("cfg.toml:1: members: missing"));
        assert!(err("role = ").starts_with("cfg.toml:1: not TOML"));
        assert!(err(&GOOD.replace("[profile]", "[profile]\nbaud = 9601"))
            .starts_with("cfg.toml:13: profile.baud: 9601 is not a standard serial rate"));
    }

    #[test]
    fn reads_the_data_plane_device() {
        let c = parse(
            "c",
            &format!("{GOOD}\n[tun]\naddress = \"10.77.0.1/30\"\npeer = \"10.77.0.2\"\n"),
            Path::new("."),
        )
        .unwrap();
        assert_eq!(c.tun.unwrap().name, "farlink0");
        assert!(err(&format!(
            "{GOOD}\n[tun]\naddress = \"10.77.0.1\"\npeer = \"10.77.0.2\"\n"
        ))
        .starts_with("cfg.toml:22: tun.address: expected an IPv4 address with its prefix"));
    }

    #[test]
    fn reads_the_control_socket_and_the_dashboard() {
        let c = parse("c", GOOD, Path::new("/etc/farlink")).unwrap();
        assert!(c.control.is_none() && c.dashboard.is_none());
        let text = GOOD.replace(
            "primary = true\n",
            "primary = true\ncontrol = \"air.sock\"\n[dashboard]\ntoken = \"s\"\n",
        );
        let c = parse("c", &text, Path::new("/etc/farlink")).unwrap();
        assert_eq!(c.control, Some(PathBuf::from("/etc/farlink/air.sock")));
        let d = c.dashboard.clone().unwrap();
        assert_eq!(
            (d.listen.as_str(), d.token.as_deref()),
            ("127.0.0.1:8750", Some("s"))
        );
        assert_eq!(c.to_json()["dashboard"]["listen"], "127.0.0.1:8750");
        assert_eq!(c.to_json()["control"], "/etc/farlink/air.sock");
        assert!(
            err(&GOOD.replace("primary = true\n", "primary = true\ncontrol = \"\"\n"))
                .starts_with("cfg.toml:4: control: expected a socket path of 1 to 107 bytes")
        );
        assert!(err(&GOOD.replace(
            "primary = true\n",
            "primary = true\n[dashboard]\nport = 1\n"
        ))
        .starts_with("cfg.toml:5: dashboard.port: unknown field; expected one of: listen"));
        assert!(err(&GOOD.replace(
            "primary = true\n",
            "primary = true\n[dashboard]\ntoken = \"\"\n"
        ))
        .starts_with("cfg.toml:5: dashboard.token: expected a non-empty token"));
    }
}

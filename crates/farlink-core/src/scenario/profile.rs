//! TCP profiles (`[flows.tcp] profile`): one word for a family of TCP defaults.
//!
//! `rfc`, the default, is farlink's own defaults (after the RFCs; `tcp.rs`). `linux` is Linux's
//! connection and sender out of the box, each field after the kernel source it follows
//! ([`LINUX_FIELDS`]), and the controller models of Linux's modules: under it `cc` names a
//! module, and the controller that models the module's arithmetic runs
//! ([`CcConfig::LINUX_MODELS`]: `cubic` is `cubic-linux`), Reno growing by acknowledged segments
//! as Linux's does. A field given beside the profile wins over it; the profile wins over the
//! defaults. This list is the only one: `farlink.linux_tcp` reads it through the bindings.

use std::str::FromStr;

use serde_json::{Map, Value};

use super::errors::ScenarioError;
use super::raw::RawTcp;
use super::tcp::tcp_over;
use crate::tcp::cc::CcConfig;
use crate::tcp::UnknownName;

/// A family of TCP defaults (module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TcpProfile {
    /// farlink's defaults (RFC 6298's timer, SACK recovery, ...).
    #[default]
    Rfc,
    /// Linux's connection and sender defaults and its modules' controllers.
    Linux,
}

/// Which half of TCP a profile's field belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProfilePart {
    /// Options, initial window and timer, the receiver's ACKs and out-of-order queue.
    Connection,
    /// The sender's retransmission timer, loss detection and window reduction.
    Sender,
}

impl ProfilePart {
    pub fn name(self) -> &'static str {
        match self {
            ProfilePart::Connection => "connection",
            ProfilePart::Sender => "sender",
        }
    }
}

/// One `[flows.tcp]` field a profile sets.
#[derive(Clone, Copy, Debug)]
pub struct ProfileField {
    /// The field as a scenario writes it (`initial_rto`).
    pub key: &'static str,
    /// Its value as JSON text (`"\"1s\""`).
    pub value: &'static str,
    /// Its name in the resolved scenario (`initial_rto_s`).
    pub resolved: &'static str,
    pub part: ProfilePart,
    /// What the value follows, in the kernel's source.
    pub source: &'static str,
}

const fn field(
    key: &'static str,
    value: &'static str,
    resolved: &'static str,
    part: ProfilePart,
    source: &'static str,
) -> ProfileField {
    ProfileField {
        key,
        value,
        resolved,
        part,
        source,
    }
}

use ProfilePart::{Connection, Sender};

/// Linux's connection and sender, field by field, as Linux (6.x) sets them out of the box.
pub const LINUX_FIELDS: &[ProfileField] = &[
    field(
        "initial_window_segments",
        "10",
        "initial_window_segments",
        Connection,
        "TCP_INIT_CWND (include/net/tcp.h; RFC 6928)",
    ),
    field(
        "initial_rto",
        "\"1s\"",
        "initial_rto_s",
        Connection,
        "TCP_TIMEOUT_INIT (include/net/tcp.h)",
    ),
    field(
        "sack",
        "true",
        "sack",
        Connection,
        "net.ipv4.tcp_sack = 1 (net/ipv4/tcp_ipv4.c)",
    ),
    field(
        "timestamps",
        "true",
        "timestamps",
        Connection,
        "net.ipv4.tcp_timestamps = 1 (net/ipv4/tcp_ipv4.c)",
    ),
    field(
        "window_scaling",
        "true",
        "window_scaling",
        Connection,
        "net.ipv4.tcp_window_scaling = 1 (net/ipv4/tcp_ipv4.c)",
    ),
    field(
        "delayed_ack",
        "true",
        "delayed_ack",
        Connection,
        "__tcp_ack_snd_check, tcp_send_delayed_ack (net/ipv4/tcp_input.c, tcp_output.c): \
         an ACK for every second full segment, else after the delayed-ACK timer",
    ),
    field(
        "delayed_ack_timeout",
        "\"40ms\"",
        "delayed_ack_timeout_s",
        Connection,
        "TCP_ATO_MIN (include/net/tcp.h), where the kernel's adaptive timer starts",
    ),
    field(
        "quick_ack",
        "true",
        "quick_ack",
        Connection,
        "tcp_incr_quickack, tcp_event_data_recv (net/ipv4/tcp_input.c)",
    ),
    field(
        "max_ooo_ranges",
        "\"window\"",
        "max_ooo_ranges",
        Connection,
        "tcp_data_queue_ofo, tcp_prune_ofo_queue (net/ipv4/tcp_input.c): bounded by the \
         receive memory, not by a count",
    ),
    field(
        "rto",
        "\"linux\"",
        "rto",
        Sender,
        "tcp_rtt_estimator, tcp_set_rto (net/ipv4/tcp_input.c)",
    ),
    field(
        "recovery",
        "\"rack\"",
        "recovery",
        Sender,
        "RACK-TLP, net.ipv4.tcp_recovery = 1 (net/ipv4/tcp_recovery.c; RFC 8985)",
    ),
    field(
        "cwnd_reduction",
        "\"prr\"",
        "cwnd_reduction",
        Sender,
        "tcp_cwnd_reduction (net/ipv4/tcp_input.c; RFC 6937)",
    ),
    field(
        "min_rto",
        "\"200ms\"",
        "min_rto_s",
        Sender,
        "TCP_RTO_MIN (include/net/tcp.h)",
    ),
];

/// Where Linux's Reno growth rule comes from (the profile's `growth` for `cc = "reno"`).
pub const LINUX_RENO_GROWTH_SOURCE: &str =
    "tcp_slow_start, tcp_cong_avoid_ai (net/ipv4/tcp_cong.c): cwnd grows by the segments an \
     ACK acknowledges";

impl TcpProfile {
    /// Every profile's name, as scenarios and the command line spell it.
    pub const NAMES: &'static [&'static str] = &["rfc", "linux"];

    pub fn name(self) -> &'static str {
        match self {
            TcpProfile::Rfc => "rfc",
            TcpProfile::Linux => "linux",
        }
    }

    /// Whether this is the default profile (which the resolved scenario does not print).
    pub fn is_rfc(&self) -> bool {
        *self == TcpProfile::Rfc
    }

    /// The fields the profile sets where the scenario does not.
    pub fn fields(self) -> &'static [ProfileField] {
        match self {
            TcpProfile::Rfc => &[],
            TcpProfile::Linux => LINUX_FIELDS,
        }
    }

    /// The controller that runs for `cc` (lower case) under the profile: under `linux` the
    /// model of the module so named, if farlink has one.
    pub fn controller(self, cc: &str) -> &str {
        match self {
            TcpProfile::Rfc => cc,
            TcpProfile::Linux => CcConfig::LINUX_MODELS
                .iter()
                .find(|(module, _)| *module == cc)
                .map_or(cc, |(_, model)| model),
        }
    }

    /// The window growth (`growth`) the profile gives controller `cc` where the scenario gives
    /// none: under `linux`, Reno's by acknowledged segments.
    pub fn growth(self, cc: &str) -> Option<&'static str> {
        match (self, cc) {
            (TcpProfile::Linux, "reno") => Some("byte-counting"),
            _ => None,
        }
    }

    /// The loss recovery a controller named on the command line (`--tcp`) runs over: the
    /// profile's own, if it has one.
    pub fn recovery(self) -> Option<&'static str> {
        self.fields()
            .iter()
            .find(|f| f.key == "recovery")
            .and_then(|f| f.value.strip_prefix('"')?.strip_suffix('"'))
    }

    /// `given` with the profile's fields where it gives none (as a split flow's segment
    /// inherits its flow's: a quantity's two spellings go together, delayed ACKs switched off
    /// take no timer).
    pub(super) fn fill(self, given: &RawTcp) -> Result<RawTcp, ScenarioError> {
        if self.fields().is_empty() {
            return Ok(given.clone());
        }
        Ok(tcp_over(&self.table()?, given))
    }

    /// The profile's fields read as a `[flows.tcp]` table.
    fn table(self) -> Result<RawTcp, ScenarioError> {
        let mut table = Map::new();
        for f in self.fields() {
            let value: Value = serde_json::from_str(f.value).map_err(|e| self.broken(f.key, e))?;
            table.insert(f.key.to_owned(), value);
        }
        serde_json::from_value(Value::Object(table)).map_err(|e| self.broken("", e))
    }

    /// A profile's own table that does not read: a bug in [`LINUX_FIELDS`], reported rather
    /// than panicked on (tested never to happen).
    fn broken(self, key: &str, e: serde_json::Error) -> ScenarioError {
        ScenarioError::new(
            "",
            format!(
                "the {} profile's field {key:?} does not read ({e}); please report this",
                self.name()
            ),
        )
    }
}

impl FromStr for TcpProfile {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "rfc" => Ok(TcpProfile::Rfc),
            "linux" => Ok(TcpProfile::Linux),
            _ => Err(UnknownName {
                what: "TCP profile",
                name: s.to_owned(),
                expected: Self::NAMES,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_reads_as_a_tcp_table() {
        for name in TcpProfile::NAMES {
            let profile: TcpProfile = name.parse().unwrap();
            assert_eq!(profile.name(), *name);
            profile.table().unwrap();
        }
        let e = "bsd".parse::<TcpProfile>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown TCP profile \"bsd\"; expected one of: rfc, linux"
        );
    }

    #[test]
    fn linux_names_its_modules_models_and_its_recovery() {
        let linux = TcpProfile::Linux;
        assert_eq!(linux.controller("cubic"), "cubic-linux");
        assert_eq!(linux.controller("cubic-linux"), "cubic-linux");
        assert_eq!(linux.controller("bbr"), "bbr");
        assert_eq!(TcpProfile::Rfc.controller("cubic"), "cubic");
        assert_eq!(linux.growth("reno"), Some("byte-counting"));
        assert_eq!(linux.growth("cubic-linux"), None);
        assert_eq!(TcpProfile::Rfc.growth("reno"), None);
        assert_eq!(linux.recovery(), Some("rack"));
        assert_eq!(TcpProfile::Rfc.recovery(), None);
    }

    #[test]
    fn a_field_given_beside_the_profile_wins_in_either_spelling() {
        let given: RawTcp =
            serde_json::from_str(r#"{"min_rto_s": 1.0, "delayed_ack": false, "sack": false}"#)
                .unwrap();
        let t = TcpProfile::Linux.fill(&given).unwrap();
        assert!(t.min_rto.is_none() && t.min_rto_s.is_some());
        assert_eq!(t.sack, Some(false));
        assert_eq!(t.delayed_ack, Some(false));
        // Delayed ACKs switched off take neither Linux's timer nor its quick-ACK mode.
        assert!(t.delayed_ack_timeout.is_none() && t.quick_ack.is_none());
        assert_eq!(t.rto.as_deref(), Some("linux"));
    }
}

//! Multilink PPP bundles: members, ARQ, call drops and redial.

use std::collections::BTreeMap;

use super::errors::{at, err, ScenarioError};
use super::quantity::{check_name, one_of, opt_bytes, opt_duration, opt_event_rate, rate_from};
use super::raw::{Bare, Duration, RawArq, RawBundle, RawLink, RawMember, RawMembers, UnitText};
use crate::links::arq::{ArqConfig, ArqMode};
use crate::links::mlppp::{DEFAULT_MP_HEADER_BYTES, DEFAULT_TXQUEUE_PKTS, MAX_MEMBERS};
use crate::modem::ModemConfig;
use crate::time::{BitRate, SimDuration};

/// Default time from a call drop to the moment it is noticed: seed 000 section 5.2, "in the
/// deployed Iridium system this time is at least of the order of 30 seconds".
pub const DEFAULT_DETECTION_DELAY: SimDuration = SimDuration::from_secs(30);
/// Default MLPPP reassembly timeout: longer than any member's queueing and ARQ delay in the
/// presets (about 20 s on Iridium), so it only ends stalls the sequence numbers cannot.
pub const DEFAULT_REASSEMBLY_TIMEOUT: SimDuration = SimDuration::from_secs(60);
/// Default tries per ARQ frame (a "small number of frame retransmissions", seed 004 II).
pub const DEFAULT_ARQ_MAX_TRIES: u32 = 3;

/// A multilink PPP bundle (see [`crate::mlppp`] and [`crate::modem`]).
#[derive(Clone, Debug, PartialEq)]
pub struct BundleSpec {
    pub members: Vec<MemberSpec>,
    pub arq_mode: Option<ArqMode>,
    pub fragment: bool,
    pub mp_header_bytes: u32,
    pub reassembly_timeout: SimDuration,
    pub detection_delay: SimDuration,
    pub dial_time: SimDuration,
    pub dial_failure_prob: f64,
    pub modem: ModemConfig,
    pub primary: bool,
    pub start_connected: bool,
}

/// One member of a bundle (both directions).
#[derive(Clone, Debug, PartialEq)]
pub struct MemberSpec {
    pub name: String,
    pub rate: BitRate,
    pub delay: SimDuration,
    pub txqueue_pkts: u32,
    /// Poisson call drops while the call is up, per second.
    pub call_drop_rate_per_s: f64,
    /// The ARQ, its window resolved for this member's rate and delay.
    pub arq: Option<ArqConfig>,
}

impl BundleSpec {
    /// The sum of the members' rates.
    pub fn capacity(&self) -> BitRate {
        self.members.iter().map(|m| m.rate).sum()
    }
}

/// A bundle link's rate and delay are its members': refuses them on the link at `p` or in
/// either direction.
pub(super) fn no_rate_or_delay_of_its_own(p: &str, l: &RawLink) -> Result<(), ScenarioError> {
    for (key, d) in [("", None), ("fwd", l.fwd.as_ref()), ("rev", l.rev.as_ref())] {
        let (rate, delay) = match d {
            None => (
                l.rate.is_some() || l.rate_bps.is_some(),
                l.delay.is_some() || l.delay_s.is_some(),
            ),
            Some(d) => (
                d.rate.is_some() || d.rate_bps.is_some(),
                d.delay.is_some() || d.delay_s.is_some(),
            ),
        };
        let parent = if key.is_empty() {
            p.to_owned()
        } else {
            at(p, key)
        };
        if rate || delay {
            let field = if rate { "rate" } else { "delay" };
            return err(
                at(&parent, field),
                format!(
                    "a bundle link takes its {field} from its members (bundle.{field} or bundle.members)"
                ),
            );
        }
    }
    Ok(())
}

/// What every member takes unless it gives its own.
struct MemberDefaults {
    rate: Option<BitRate>,
    delay: Option<SimDuration>,
    txqueue_pkts: u32,
    call_drop_rate_per_s: f64,
}

/// The bundle's ARQ before each member's window is known: mode, frame bytes, tries, the
/// window if given, and the path of `arq`.
type ArqPlan = (ArqMode, u32, u32, Option<u32>, String);

pub(super) fn bundle_spec(p: &str, b: &RawBundle) -> Result<BundleSpec, ScenarioError> {
    let empty = Vec::new();
    let (count, listed): (u64, &Vec<RawMember>) = match &b.members {
        RawMembers::Count(n) => (*n, &empty),
        RawMembers::List(list) => (list.len() as u64, list),
    };
    if count == 0 || count > u64::from(MAX_MEMBERS) {
        return err(
            at(p, "members"),
            format!("expected 1 to {MAX_MEMBERS} members, got {count}"),
        );
    }
    let rate = one_of(p, ("rate", &b.rate), ("rate_bps", &b.rate_bps))?
        .map(|(v, path)| rate_from(&path, v))
        .transpose()?;
    let delay = opt_duration(p, ("delay", &b.delay), ("delay_s", &b.delay_s), true)?;
    let txqueue_pkts = b.txqueue_pkts.unwrap_or(DEFAULT_TXQUEUE_PKTS);
    if txqueue_pkts == 0 {
        return err(
            at(p, "txqueue_pkts"),
            "expected a transmit queue of at least 1 packet (the one being sent), got 0",
        );
    }
    let call_drop_rate_per_s = opt_event_rate(
        p,
        ("call_drop_rate", &b.call_drop_rate),
        ("call_drop_rate_per_s", &b.call_drop_rate_per_s),
    )?
    .unwrap_or(0.0);
    let arq = b.arq.as_ref().map(|a| arq_plan(p, a)).transpose()?;
    let defaults = MemberDefaults {
        rate,
        delay,
        txqueue_pkts,
        call_drop_rate_per_s,
    };
    let mut members = Vec::with_capacity(count as usize);
    let mut names = BTreeMap::new();
    for i in 0..count as usize {
        let default = RawMember::default();
        let m = listed.get(i).unwrap_or(&default);
        members.push(member(p, i, m, &mut names, &defaults, &arq)?);
    }
    dialing(p, b, members, arq.map(|a| a.0))
}

/// The bundle's `arq` table at `p`.arq.
fn arq_plan(p: &str, a: &RawArq) -> Result<ArqPlan, ScenarioError> {
    let ap = at(p, "arq");
    let mode = a
        .mode
        .parse::<ArqMode>()
        .map_err(|e| ScenarioError::new(at(&ap, "mode"), e))?;
    let Some((frame, frame_path)) = opt_bytes(
        &ap,
        ("frame", &a.frame),
        ("frame_bytes", a.frame_bytes.map(u64::from)),
    )?
    else {
        return err(
            at(&ap, "frame"),
            "missing: give the payload of a frame as frame (\"27B\") or frame_bytes",
        );
    };
    if frame == 0 || frame > 65_535 {
        return err(
            frame_path,
            format!("expected a frame payload of 1 to 65535 bytes, got {frame}"),
        );
    }
    Ok((
        mode,
        frame as u32,
        a.max_tries.unwrap_or(DEFAULT_ARQ_MAX_TRIES),
        a.window_frames,
        ap,
    ))
}

/// Member `i` of the bundle at `p`: its own values, else the bundle's.
fn member(
    p: &str,
    i: usize,
    m: &RawMember,
    names: &mut BTreeMap<String, usize>,
    defaults: &MemberDefaults,
    arq: &Option<ArqPlan>,
) -> Result<MemberSpec, ScenarioError> {
    let mp = at(p, &format!("members[{i}]"));
    let name = match &m.name {
        Some(n) => {
            check_name(&at(&mp, "name"), n)?;
            n.clone()
        }
        None => format!("member{i}"),
    };
    if names.insert(name.clone(), i).is_some() {
        return err(at(&mp, "name"), format!("duplicate member name \"{name}\""));
    }
    let own_rate = one_of(&mp, ("rate", &m.rate), ("rate_bps", &m.rate_bps))?
        .map(|(v, path)| rate_from(&path, v))
        .transpose()?;
    let Some(rate) = own_rate.or(defaults.rate) else {
        return err(
            at(p, "rate"),
            format!("missing: give rate (\"2400bps\") or rate_bps here or in members[{i}]"),
        );
    };
    let own_delay = opt_duration(&mp, ("delay", &m.delay), ("delay_s", &m.delay_s), true)?;
    let Some(delay) = own_delay.or(defaults.delay) else {
        return err(
            at(p, "delay"),
            format!("missing: give delay (\"0.5s\") or delay_s here or in members[{i}]"),
        );
    };
    let txqueue_pkts = m.txqueue_pkts.unwrap_or(defaults.txqueue_pkts);
    if txqueue_pkts == 0 {
        return err(
            at(&mp, "txqueue_pkts"),
            "expected a transmit queue of at least 1 packet (the one being sent), got 0",
        );
    }
    let call_drop_rate_per_s = opt_event_rate(
        &mp,
        ("call_drop_rate", &m.call_drop_rate),
        ("call_drop_rate_per_s", &m.call_drop_rate_per_s),
    )?
    .unwrap_or(defaults.call_drop_rate_per_s);
    let arq = match arq {
        None => None,
        Some((mode, frame_bytes, max_tries, window, ap)) => {
            let cfg = ArqConfig {
                mode: *mode,
                frame_bytes: *frame_bytes,
                max_tries: *max_tries,
                window_frames: window.unwrap_or_else(|| {
                    ArqConfig::default_window(*mode, rate, delay, *frame_bytes, *max_tries)
                }),
            };
            cfg.validate()
                .map_err(|e| ScenarioError::new(at(ap, e.param), e.message))?;
            Some(cfg)
        }
    };
    Ok(MemberSpec {
        name,
        rate,
        delay,
        txqueue_pkts,
        call_drop_rate_per_s,
        arq,
    })
}

/// The rest of the bundle at `p` once its members are known: dialing, the modem's redial
/// policy, multilink framing and timers.
fn dialing(
    p: &str,
    b: &RawBundle,
    members: Vec<MemberSpec>,
    arq_mode: Option<ArqMode>,
) -> Result<BundleSpec, ScenarioError> {
    let duration = |plain: (&str, &Option<UnitText<Duration>>),
                    bare: (&str, &Option<Bare>),
                    allow_zero: bool|
     -> Result<Option<SimDuration>, ScenarioError> {
        opt_duration(p, plain, bare, allow_zero)
    };
    let defaults = ModemConfig::default();
    let modem = ModemConfig {
        t_d: duration(("t_d", &b.t_d), ("t_d_s", &b.t_d_s), true)?.unwrap_or(defaults.t_d),
        t_f: duration(("t_f", &b.t_f), ("t_f_s", &b.t_f_s), true)?.unwrap_or(defaults.t_f),
        max_attempts: b.max_attempts.unwrap_or(defaults.max_attempts),
        blocked_for: duration(
            ("blocked_for", &b.blocked_for),
            ("blocked_for_s", &b.blocked_for_s),
            true,
        )?
        .unwrap_or(defaults.blocked_for),
    };
    let start_connected = match b.start.as_deref() {
        None | Some("connected") => true,
        Some("dialing") => false,
        Some(other) => {
            return err(
                at(p, "start"),
                format!("unknown start \"{other}\"; expected one of: connected, dialing"),
            )
        }
    };
    let dial_failure_prob = b.dial_failure_prob.map_or(0.0, |v| v.0);
    if !(0.0..=1.0).contains(&dial_failure_prob) {
        return err(
            at(p, "dial_failure_prob"),
            format!("expected a probability in [0, 1], got {dial_failure_prob}"),
        );
    }
    let dials = !start_connected || members.iter().any(|m| m.call_drop_rate_per_s > 0.0);
    // A dial takes time: with none, a modem whose dials always fail would redial forever at
    // one instant.
    let dial = duration(
        ("dial_time", &b.dial_time),
        ("dial_time_s", &b.dial_time_s),
        false,
    )?;
    let dial_time = match dial {
        Some(d) => d,
        None if dials => {
            return err(
                at(p, "dial_time"),
                "missing: members redial (they start dialing or have call drops), so give the \
                 time a dial takes as dial_time (\"15s\") or dial_time_s",
            )
        }
        None => SimDuration::ZERO,
    };
    let mp_header_bytes = match opt_bytes(
        p,
        ("mp_header", &b.mp_header),
        ("mp_header_bytes", b.mp_header_bytes.map(u64::from)),
    )? {
        Some((v, path)) if v > 64 => {
            return err(
                path,
                format!("expected a multilink header of 0 to 64 bytes, got {v}"),
            )
        }
        Some((v, _)) => v as u32,
        None => DEFAULT_MP_HEADER_BYTES,
    };
    Ok(BundleSpec {
        members,
        arq_mode,
        fragment: b.fragment.unwrap_or(false),
        mp_header_bytes,
        reassembly_timeout: duration(
            ("reassembly_timeout", &b.reassembly_timeout),
            ("reassembly_timeout_s", &b.reassembly_timeout_s),
            false,
        )?
        .unwrap_or(DEFAULT_REASSEMBLY_TIMEOUT),
        detection_delay: duration(
            ("detection_delay", &b.detection_delay),
            ("detection_delay_s", &b.detection_delay_s),
            true,
        )?
        .unwrap_or(DEFAULT_DETECTION_DELAY),
        dial_time,
        dial_failure_prob,
        modem,
        primary: b.primary.unwrap_or(false),
        start_connected,
    })
}

//! IS-707 radio hops: the RLP of a link.

use super::errors::{at, err, ScenarioError};
use super::links::DirectionSpec;
use super::quantity::{opt_bytes, opt_duration};
use super::raw::{RawIdle, RawRlp, Size, UnitText};
use crate::links::rlp::{
    IdlePolicy, RlpConfig, IS707_FRAME_BYTES, IS707_NAK_ROUNDS, IS707_PAYLOAD_BYTES,
};
use crate::time::SimDuration;

/// The radio link protocol of a link (both directions); rate, delay and queue are the
/// direction's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RlpSpec {
    pub frame_bytes: u32,
    pub payload_bytes: u32,
    pub nak_rounds: u32,
    /// `None`: [`RlpConfig::default_nak_timer`] of the direction.
    pub nak_timer: Option<SimDuration>,
    pub idle: IdlePolicy,
    /// Frame error rate P_e and normalised Doppler f_d T of both directions' channel, when
    /// given here rather than as each direction's loss.
    pub channel: Option<(f64, f64)>,
}

impl RlpSpec {
    /// The component's configuration for one direction.
    pub fn config(&self, dir: &DirectionSpec) -> RlpConfig {
        RlpConfig {
            rate: dir.rate,
            frame_bytes: self.frame_bytes,
            payload_bytes: self.payload_bytes,
            delay: dir.delay,
            nak_rounds: self.nak_rounds,
            nak_timer: self.nak_timer.unwrap_or_else(|| {
                RlpConfig::default_nak_timer(dir.rate, self.frame_bytes, dir.delay)
            }),
            idle: self.idle,
            queue_limit: dir.queue,
        }
    }
}

pub(super) fn rlp_spec(p: &str, r: &RawRlp) -> Result<RlpSpec, ScenarioError> {
    let idle = match &r.idle_frames {
        None => IdlePolicy::None,
        Some(RawIdle::Name(n, _)) if n == "none" => IdlePolicy::None,
        Some(RawIdle::Name(n, _)) if n == "unlimited" => IdlePolicy::Unlimited,
        Some(RawIdle::Count(n, _)) => match u32::try_from(*n) {
            Ok(0) => IdlePolicy::None,
            Ok(n) if n <= 1_000_000 => IdlePolicy::Count(n),
            _ => {
                return err(
                    at(p, "idle_frames"),
                    format!("expected at most 1000000 idle frames (or \"unlimited\"), got {n}"),
                )
            }
        },
        Some(RawIdle::Name(n, _)) => {
            return err(
                at(p, "idle_frames"),
                format!("expected \"none\", \"unlimited\" or a number of idle frames, got \"{n}\""),
            )
        }
    };
    let bytes = |plain: (&str, &Option<UnitText<Size>>),
                 bare: (&str, Option<u64>),
                 default: u32|
     -> Result<u32, ScenarioError> {
        match opt_bytes(p, plain, bare)? {
            None => Ok(default),
            Some((v, path)) => u32::try_from(v)
                .ok()
                .filter(|&v| (1..=65_535).contains(&v))
                .ok_or_else(|| {
                    ScenarioError::new(path, format!("expected 1 to 65535 bytes, got {v}"))
                }),
        }
    };
    let frame_bytes = bytes(
        ("frame", &r.frame),
        ("frame_bytes", r.frame_bytes),
        IS707_FRAME_BYTES,
    )?;
    let payload_bytes = bytes(
        ("payload", &r.payload),
        ("payload_bytes", r.payload_bytes),
        IS707_PAYLOAD_BYTES,
    )?;
    let nak_timer = opt_duration(
        p,
        ("nak_timer", &r.nak_timer),
        ("nak_timer_s", &r.nak_timer_s),
        false,
    )?;
    let channel = match (r.pe.map(|v| v.0), r.fd_t) {
        (Some(pe), Some(fd_t)) => Some((pe, fd_t)),
        (None, None) => None,
        (Some(_), None) => {
            return err(
                at(p, "fd_t"),
                "missing: give the channel's pe and fd_t together",
            )
        }
        (None, Some(_)) => {
            return err(
                at(p, "pe"),
                "missing: give the channel's pe and fd_t together",
            )
        }
    };
    Ok(RlpSpec {
        frame_bytes,
        payload_bytes,
        nak_rounds: r.nak_rounds.unwrap_or(IS707_NAK_ROUNDS),
        nak_timer,
        idle,
        channel,
    })
}

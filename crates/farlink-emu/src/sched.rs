//! Real-time scheduling of the driver's thread while it runs: other processes' threads then
//! cannot hold it off its deadlines for a whole time slice (measured: under a load of 8 on two
//! cores the p99 departure error is milliseconds without it). The kernel's RT throttling (95 %
//! of each second by default) still bounds what a spinning RT thread can take.

/// The calling thread's scheduling before [`Realtime::enter`]; restored when dropped.
pub(crate) struct Realtime {
    policy: libc::c_int,
    param: libc::sched_param,
}

impl Realtime {
    /// Switches the calling thread to SCHED_FIFO at `priority`; `None` where not permitted
    /// (no CAP_SYS_NICE), the thread left as it was.
    pub(crate) fn enter(priority: i32) -> Option<Realtime> {
        let mut param = libc::sched_param { sched_priority: 0 };
        // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param for the call.
        // nix has no wrapper for these calls.
        #[allow(unsafe_code)]
        let (policy, got) = unsafe {
            (
                libc::sched_getscheduler(0),
                libc::sched_getparam(0, &mut param),
            )
        };
        if policy < 0 || got < 0 {
            return None;
        }
        let rt = libc::sched_param {
            sched_priority: priority,
        };
        // SAFETY: as above.
        #[allow(unsafe_code)]
        let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &rt) };
        (rc == 0).then_some(Realtime { policy, param })
    }
}

impl Drop for Realtime {
    fn drop(&mut self) {
        // SAFETY: as in `enter`; restores what the thread had.
        #[allow(unsafe_code)]
        unsafe {
            libc::sched_setscheduler(0, self.policy, &self.param);
        }
    }
}

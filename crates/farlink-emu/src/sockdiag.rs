//! A namespace's TCP sockets through sock_diag (`NETLINK_SOCK_DIAG`, `inet_diag`): its
//! listeners (what a `--server` listens on, IPv4 or IPv6), and its connections with their
//! `TCP_INFO` (`INET_DIAG_INFO`), polled while they live and read once more as the kernel
//! destroys them (the `SKNLGRP_INET_TCP_DESTROY` broadcast). A netlink socket belongs to the
//! namespace it was made in, so each is made on a thread inside the namespace and may then be
//! read from any thread.

use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsFd;
use std::time::Duration;

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_sock_diag::constants::{AF_INET, AF_INET6, IPPROTO_TCP};
use netlink_packet_sock_diag::inet::nlas::Nla;
use netlink_packet_sock_diag::inet::{ExtensionFlags, InetRequest, SocketId, StateFlags};
use netlink_packet_sock_diag::SockDiagMessage;
use netlink_sys::protocols::NETLINK_SOCK_DIAG;
use netlink_sys::{Socket, SocketAddr as NetlinkAddr};
use nix::sys::socket::{self, sockopt};
use nix::sys::time::TimeVal;

use crate::error::EmuError;
use crate::netns::Netns;
use crate::tcpinfo::TcpInfo;

/// The sock_diag multicast group of TCP sockets being destroyed (`SKNLGRP_INET_TCP_DESTROY`).
const TCP_DESTROY_GROUP: u32 = 1;
/// How long a dump may take before it is given up (the kernel answers at once).
const DUMP_TIMEOUT: Duration = Duration::from_millis(500);

/// One TCP socket as sock_diag reports it.
#[derive(Clone, Debug)]
pub(crate) struct DiagSocket {
    pub(crate) state: u8,
    pub(crate) local: SocketAddr,
    pub(crate) remote: SocketAddr,
    /// The kernel's identifier of the socket, unique while the namespace lives.
    pub(crate) cookie: [u8; 8],
    /// Its `TCP_INFO`, where asked for and the socket is a full one (not a listener's
    /// request or a TIME_WAIT remnant).
    pub(crate) info: Option<TcpInfo>,
}

/// A sock_diag socket of one namespace.
pub(crate) struct SockDiag {
    socket: Socket,
}

fn nl_error(what: &str, e: impl std::fmt::Display) -> EmuError {
    EmuError::System(format!("sock_diag {what}: {e}"))
}

impl SockDiag {
    /// A socket for dumps of `ns`'s TCP sockets.
    pub(crate) fn open(ns: &Netns) -> Result<SockDiag, EmuError> {
        let socket = ns
            .run(|| -> std::io::Result<Socket> {
                let mut s = Socket::new(NETLINK_SOCK_DIAG)?;
                s.bind_auto()?;
                s.connect(&NetlinkAddr::new(0, 0))?;
                let t = TimeVal::new(0, DUMP_TIMEOUT.as_micros() as _);
                socket::setsockopt(&s.as_fd(), sockopt::ReceiveTimeout, &t)?;
                Ok(s)
            })?
            .map_err(|e| nl_error("socket", e))?;
        Ok(SockDiag { socket })
    }

    /// A socket told of each TCP socket of `ns` the kernel destroys, with its last
    /// `TCP_INFO`; read without blocking by [`SockDiag::destroyed`].
    pub(crate) fn open_destroyed(ns: &Netns) -> Result<SockDiag, EmuError> {
        let socket = ns
            .run(|| -> std::io::Result<Socket> {
                let mut s = Socket::new(NETLINK_SOCK_DIAG)?;
                s.bind_auto()?;
                s.add_membership(TCP_DESTROY_GROUP)?;
                s.set_non_blocking(true)?;
                // A burst of closes between two reads must not overflow the queue.
                socket::setsockopt(&s.as_fd(), sockopt::RcvBuf, &(1 << 20))?;
                Ok(s)
            })?
            .map_err(|e| nl_error("destroy group", e))?;
        Ok(SockDiag { socket })
    }

    /// The namespace's TCP sockets in `states`, IPv4 and IPv6, with `TCP_INFO` if `info`.
    pub(crate) fn dump(&self, states: StateFlags, info: bool) -> Result<Vec<DiagSocket>, EmuError> {
        let mut out = Vec::new();
        for family in [AF_INET, AF_INET6] {
            self.request(family, states.clone(), info)?;
            self.receive(&mut out, true)?;
        }
        Ok(out)
    }

    /// The sockets destroyed since the last call (nothing if none).
    pub(crate) fn destroyed(&self) -> Result<Vec<DiagSocket>, EmuError> {
        let mut out = Vec::new();
        self.receive(&mut out, false)?;
        Ok(out)
    }

    fn request(&self, family: u8, states: StateFlags, info: bool) -> Result<(), EmuError> {
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | NLM_F_DUMP;
        let socket_id = if family == AF_INET {
            SocketId::new_v4()
        } else {
            SocketId::new_v6()
        };
        let mut packet = NetlinkMessage::new(
            header,
            SockDiagMessage::InetRequest(InetRequest {
                family,
                protocol: IPPROTO_TCP,
                extensions: if info {
                    ExtensionFlags::INFO
                } else {
                    ExtensionFlags::empty()
                },
                states,
                socket_id,
            })
            .into(),
        );
        packet.finalize();
        let mut buf = vec![0u8; packet.buffer_len()];
        packet.serialize(&mut buf);
        self.socket
            .send(&buf, 0)
            .map_err(|e| nl_error("request", e))?;
        Ok(())
    }

    /// Reads responses into `out`: to the dump's end (`until_done`), or while any are queued.
    fn receive(&self, out: &mut Vec<DiagSocket>, until_done: bool) -> Result<(), EmuError> {
        loop {
            let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
            match self.socket.recv(&mut buf, 0) {
                Ok(_) => {}
                Err(e) if !until_done && e.kind() == std::io::ErrorKind::WouldBlock => {
                    return Ok(());
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(nl_error("receive", e)),
            }
            if parse_messages(&buf, out)? && until_done {
                return Ok(());
            }
        }
    }
}

/// The inet_diag responses in one datagram, appended to `out`; whether it ended the dump.
fn parse_messages(buf: &[u8], out: &mut Vec<DiagSocket>) -> Result<bool, EmuError> {
    let mut offset = 0;
    while offset < buf.len() {
        let msg = NetlinkMessage::<SockDiagMessage>::deserialize(&buf[offset..])
            .map_err(|e| nl_error("message", e))?;
        let len = msg.header.length as usize;
        match msg.payload {
            NetlinkPayload::InnerMessage(SockDiagMessage::InetResponse(r)) => {
                let id = &r.header.socket_id;
                let info = r.nlas.iter().find_map(|n| match n {
                    Nla::TcpInfo(raw) => TcpInfo::decode(raw),
                    _ => None,
                });
                out.push(DiagSocket {
                    state: r.header.state,
                    local: SocketAddr::new(canonical(id.source_address), id.source_port),
                    remote: SocketAddr::new(canonical(id.destination_address), id.destination_port),
                    cookie: id.cookie,
                    info,
                });
            }
            NetlinkPayload::Done(_) => return Ok(true),
            NetlinkPayload::Error(e) if e.code.is_some() => {
                return Err(nl_error("dump", e.to_io()));
            }
            _ => {}
        }
        if len == 0 {
            break;
        }
        // Messages are 4-byte aligned (NLMSG_ALIGN).
        offset += (len + 3) & !3;
    }
    Ok(false)
}

/// An IPv4 address an IPv6 socket shows mapped (`::ffff:a.b.c.d`) as the IPv4 one.
fn canonical(a: IpAddr) -> IpAddr {
    match a {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(a, IpAddr::V4),
        v4 => v4,
    }
}

/// The listeners of a dump, as `ADDR:PORT` (for a message).
pub(crate) fn describe(listeners: &[DiagSocket]) -> String {
    if listeners.is_empty() {
        return "nothing".to_owned();
    }
    listeners
        .iter()
        .map(|l| l.local.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn a_mapped_ipv4_address_is_the_ipv4_one() {
        let mapped = IpAddr::V6(Ipv4Addr::new(10, 0, 0, 3).to_ipv6_mapped());
        assert_eq!(canonical(mapped), IpAddr::V4(Ipv4Addr::new(10, 0, 0, 3)));
        let any = IpAddr::V6(Ipv6Addr::UNSPECIFIED);
        assert_eq!(canonical(any), any);
    }
}

"""ns-3 3.44's Proportional Rate Reduction with one rule changed, for the diagnosis option
`--prr-sack-delivered` of bench/ns3/aqm.py and bench/ns3/stpd_wireless.py.

ns-3 3.44's `TcpPrrRecovery::DoRecovery` adds one segment to DeliveredData on every duplicate
ACK, although with SACK the ACK's SACK blocks already count what it delivered; RFC 6937 gives
that segment to connections without SACK only (later ns-3 sources add the condition). The class
below computes PRR as 3.44 does but for that rule (docs/validation-notes.md, "The three cells
left"). Run with the interpreter of `.venv-ns3`, from a script that imported ns-3.
"""

from __future__ import annotations

_CPP = r"""
namespace farlink_prr {
using namespace ns3;
// PRR (RFC 6937) as ns-3 3.44's TcpPrrRecovery computes it, but a duplicate ACK delivers
// only what its SACK blocks cover (the module's docstring).
class PrrSackDelivered : public TcpClassicRecovery {
  public:
    static TypeId GetTypeId() {
        static TypeId tid = TypeId("farlink_prr::PrrSackDelivered")
                                .SetParent<TcpClassicRecovery>()
                                .AddConstructor<PrrSackDelivered>();
        return tid;
    }
    std::string GetName() const override { return "PrrSackDelivered"; }
    void EnterRecovery(Ptr<TcpSocketState> tcb, uint32_t, uint32_t, uint32_t delivered) override {
        m_delivered = 0;
        m_out = 0;
        m_recover_fs = tcb->m_bytesInFlight;  // RecoverFS: the pipe as recovery begins
        DoRecovery(tcb, delivered, true);
    }
    void DoRecovery(Ptr<TcpSocketState> tcb, uint32_t delivered, bool) override {
        if (delivered == 0) return;
        m_delivered += delivered;
        int64_t pipe = tcb->m_bytesInFlight, ssthresh = tcb->m_ssThresh;
        int64_t seg = tcb->m_segmentSize, sndcnt;
        if (pipe > ssthresh) {  // the proportional part: ceil(prr_delivered ssthresh / RecoverFS)
            sndcnt = int64_t((m_delivered * ssthresh + m_recover_fs - 1) / m_recover_fs) - m_out;
        } else {  // the reduction bound, with one segment more on an ACK of retransmitted data
            int64_t limit = std::max<int64_t>(int64_t(m_delivered) - m_out, delivered);
            if (tcb->m_isRetransDataAcked) limit += seg;
            sndcnt = std::min<int64_t>(limit, ssthresh - pipe);
        }
        sndcnt = std::max<int64_t>(sndcnt, m_out > 0 ? 0 : seg);  // the fast retransmission
        tcb->m_cWnd = uint32_t(pipe + sndcnt);
        tcb->m_cWndInfl = tcb->m_cWnd;
    }
    void ExitRecovery(Ptr<TcpSocketState> tcb) override { tcb->m_cWndInfl = tcb->m_cWnd; }
    void UpdateBytesSent(uint32_t sent) override { m_out += sent; }
    Ptr<TcpRecoveryOps> Fork() override { return CopyObject<PrrSackDelivered>(this); }

  private:
    uint64_t m_delivered = 0, m_recover_fs = 1;
    int64_t m_out = 0;
};
void UsePrrSackDeliveredNow(Ptr<Application> app) {
    Ptr<Socket> s = DynamicCast<BulkSendApplication>(app)->GetSocket();
    DynamicCast<TcpSocketBase>(s)->SetRecoveryAlgorithm(CreateObject<PrrSackDelivered>());
}
void UsePrrSackDelivered(Ptr<Application> app, double start_s) {
    Simulator::Schedule(Seconds(start_s) + NanoSeconds(1), &UsePrrSackDeliveredNow, app);
}
}  // namespace farlink_prr
"""

_defined = False


def define(ns) -> None:
    """Compile the class into the running ns-3 (once a process)."""
    global _defined
    if not _defined:
        ns.cppyy.cppdef(_CPP)
        _defined = True


def use_prr_sack_delivered(ns, bulk_send_app, start_s: float) -> None:
    """Give the BulkSendApplication's socket this recovery just after it starts (its socket
    exists from then)."""
    define(ns)
    ns.cppyy.gbl.farlink_prr.UsePrrSackDelivered(bulk_send_app, start_s)

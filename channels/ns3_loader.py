"""Loading ns-3 (the ``ns3`` extra, ``ns3==3.44.post0``: cppyy bindings, ``from ns import ns``)
and the C++ trace handlers the co-simulation needs.

- ``ns/__init__`` scans the current directory recursively for ``*.so`` files, so the import
  runs from an empty temporary folder (from a checkout with a virtual environment it would read
  thousands of files); the working directory is restored after. The import costs 10-25 s and
  about 660 MB, once per process.
- Python trace callbacks are not supported by the bindings: the handlers below are C++,
  compiled by ``cppyy.cppdef`` once per process, and keep their counters in C++ maps keyed by
  the client's index, which Python reads after each run.
- cppyy prints "Failed to materialize symbols" lines for ns-3's static initialisers at the
  import; the runs are not affected (tests/channels/test_ns3_lte.py).
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import tempfile
from typing import Any

__all__ = ["NS3_PACKAGE", "Ns3MissingError", "load_ns", "ns3_version"]

#: the package of the ``ns3`` extra
NS3_PACKAGE = "ns3"

#: the handlers: bytes received per client (PacketSink "Rx"), the time its target was reached,
#: TCP retransmissions (TcpSocketBase "Retransmission"), the eNB MAC's uplink grants and their
#: MCS (LteEnbMac "UlScheduling", by RNTI), and a run that stops when every target is met or
#: at a cap
_HANDLERS = r"""
#include "ns3/packet-sink.h"
#include "ns3/bulk-send-application.h"
#include "ns3/tcp-socket-base.h"
namespace wflns3 {
std::map<uint32_t, uint64_t> rx_bytes;
std::map<uint32_t, uint64_t> target_bytes;
std::map<uint32_t, double> done_s;
std::map<uint32_t, uint64_t> retransmissions;
std::map<uint16_t, uint64_t> grants;
std::map<uint16_t, uint64_t> mcs_sum;
uint32_t pending = 0;

void OnRx(uint32_t id, ns3::Ptr<const ns3::Packet> packet, const ns3::Address &from) {
  rx_bytes[id] += packet->GetSize();
  if (done_s.count(id) == 0 && target_bytes.count(id) && rx_bytes[id] >= target_bytes[id]) {
    done_s[id] = ns3::Simulator::Now().GetSeconds();
    if (pending > 0 && --pending == 0) ns3::Simulator::Stop();
  }
}
void HookSink(ns3::Ptr<ns3::PacketSink> sink, uint32_t id) {
  sink->TraceConnectWithoutContext("Rx", ns3::MakeBoundCallback(&OnRx, id));
}
void OnRetransmission(uint32_t id, ns3::Ptr<const ns3::Packet> p, const ns3::TcpHeader &h,
                      const ns3::Address &a, const ns3::Address &b,
                      ns3::Ptr<const ns3::TcpSocketBase> s) {
  retransmissions[id] += 1;
}
void HookSocket(ns3::Ptr<ns3::BulkSendApplication> app, uint32_t id) {
  ns3::Ptr<ns3::Socket> socket = app->GetSocket();
  if (socket) socket->TraceConnectWithoutContext(
      "Retransmission", ns3::MakeBoundCallback(&OnRetransmission, id));
}
void ScheduleHook(ns3::Ptr<ns3::BulkSendApplication> app, uint32_t id, double at_s) {
  ns3::Simulator::Schedule(ns3::Seconds(at_s), &HookSocket, app, id);
}
void OnUlScheduling(uint32_t frame, uint32_t subframe, uint16_t rnti, uint8_t mcs,
                    uint16_t size, uint8_t carrier) {
  grants[rnti] += 1;
  mcs_sum[rnti] += mcs;
}
void HookMac(ns3::Ptr<ns3::Object> mac) {
  mac->TraceConnectWithoutContext("UlScheduling", ns3::MakeCallback(&OnUlScheduling));
}
void Expect(uint32_t id, uint64_t bytes) {
  target_bytes[id] = rx_bytes[id] + bytes;
  done_s.erase(id);
  pending += 1;
}
void Reset() {
  rx_bytes.clear(); target_bytes.clear(); done_s.clear(); retransmissions.clear();
  grants.clear(); mcs_sum.clear(); pending = 0;
}
void StopNow() { ns3::Simulator::Stop(); }
void RunFor(double cap_s) {
  ns3::EventId cap = ns3::Simulator::Schedule(ns3::Seconds(cap_s), &StopNow);
  if (pending > 0) ns3::Simulator::Run();
  ns3::Simulator::Cancel(cap);
  pending = 0;
}
}
"""


class Ns3MissingError(ImportError):
    """The ``ns3`` extra is not installed."""


def ns3_version() -> str | None:
    """The installed ``ns3`` package's version, without importing it (None: not installed)."""
    try:
        return importlib.metadata.version(NS3_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.cache
def load_ns() -> tuple[Any, Any]:
    """(``ns``, the handlers' C++ namespace), imported once per process from an empty folder
    (module docstring). :class:`Ns3MissingError` without the extra."""
    if ns3_version() is None:
        raise Ns3MissingError(f"{NS3_PACKAGE} is not installed; pip install 'wirelessfl[ns3]'")
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="wirelessfl-ns3-") as empty:
        os.chdir(empty)
        try:
            import cppyy
            from ns import ns
        finally:
            os.chdir(here)
    cppyy.cppdef(_HANDLERS)
    return ns, cppyy.gbl.wflns3

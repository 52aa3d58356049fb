"""Controller-side steps of the multi-administrator test cases (TC_CADMIN, TC_OPCREDS), run in
chip_controller.py's process as `"admin_ops:function"` (directly, or as another controller with
`call("as", name, "admin_ops:function", ...)`).

They expose the SDK controller's pieces one at a time, so a test case can drive commissioning
by hand: PASE alone, the NOC chain a controller's CA issues for a CSR, the commissioning steps
after PASE, and administrators with a root of their own.
"""
from __future__ import annotations

from typing import Any

from chip_controller import ADMIN_VENDOR_ID, Controller


async def new_admin(c: Controller, name: str, fabric_id: int, node_id: int, own_root: bool = True,
                    vendor_id: int = ADMIN_VENDOR_ID) -> int:
    """Another administrator `name` on `fabric_id`: with a root CA of its own, or under ours."""
    if name not in c.extra:
        authority = c.keep[1].NewCertificateAuthority() if own_root else c.authority
        admin = authority.NewFabricAdmin(vendorId=vendor_id, fabricId=fabric_id)
        c.extra[name] = admin.NewController(nodeId=node_id, paaTrustStorePath=c.paa_dir)
    return node_id


async def pase(c: Controller, address: str, port: int, passcode: int, node_id: int) -> None:
    """PASE only (no commissioning step): the session is then addressed as `node_id`."""
    await c.dev.EstablishPASESessionIP(address, passcode, node_id, port)


async def commission_after_pase(c: Controller, node_id: int) -> int:
    """The commissioning steps over the PASE session to `node_id` (attestation, CSR, NOC, CASE)."""
    return await c.dev.Commission(node_id)


async def issue_chain(c: Controller, csr_response: Any, node_id: int) -> dict[str, Any]:
    """The NOC chain this controller's CA issues for a CSRResponse: noc, icac (or None), rcac, ipk."""
    chain = await c.dev.IssueNOCChain(csr_response, node_id)
    return {"noc": chain.nocBytes, "icac": chain.icacBytes or None, "rcac": chain.rcacBytes, "ipk": chain.ipkBytes}


async def expire(c: Controller, node_id: int) -> None:
    """Forget the sessions to `node_id` (the next request opens a new one)."""
    c.dev.ExpireSessions(node_id)

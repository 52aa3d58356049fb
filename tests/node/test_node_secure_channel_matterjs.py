"""Our PASE and CASE handshakes against matter.js's PaseClient/CaseClient and PaseServer/CaseServer.

matter.js (an independent Matter implementation, installed by scripts/install-test-deps.sh
into .cache/matterjs) plays the other side. Its classes run unmodified; only the exchange
under them is replaced by JSON lines over stdio, so every byte of every handshake message,
every KDF salt and every signature on its side is produced or checked by matter.js itself.
Session keys are derived from the secret and salt matter.js hands to its session manager.
"""
import json
import pathlib
import random
import subprocess
import threading

import pytest
from test_secure_channel_case import EPOCH_KEY, make_fabric

from matter_protocol.case import CaseInitiator, CaseResponder
from matter_protocol.crypto import public_key_bytes
from matter_protocol.pase import PaseInitiator, PaseResponder
from matter_protocol.spake2p import make_verifier
from matter_protocol.status_report import SecureChannelStatus as ProtocolCode

pytestmark = pytest.mark.e2e   # matter.js

MATTERJS = pathlib.Path(__file__).resolve().parents[2] / ".cache" / "matterjs" / "node_modules"

PEER_JS = r"""
import { createInterface } from "node:readline";
import * as nodeCrypto from "node:crypto";
import { NodeJsStyleCrypto, Bytes } from "@matter/general";
import { PaseClient, CaseClient, PaseServer, CaseServer, Fabric } from "@matter/protocol";

const crypto = new NodeJsStyleCrypto(nodeCrypto);
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const out = obj => process.stdout.write("@@" + JSON.stringify(obj) + "\n");
const args = JSON.parse(process.argv[2]);

const session = { parameters: {}, detachChannel() { return undefined; }, async initiateClose() {} };
const exchange = {
    channel: { transportChannel: { name: "stdio" }, session }, via: "stdio", diagnostics: {},
    session, hasUnackedMessage: false, considerClosed: false,
    async send(type, payload) { out({ type, payload: Bytes.toHex(payload) }); },
    async nextMessage() {
        const { value, done } = await lines.next();
        if (done) throw new Error("python side closed");
        const m = JSON.parse(value);
        return { payloadHeader: { messageType: m.type }, payload: Bytes.fromHex(m.payload) };
    },
    async close() {},
};
let keys, fabric;
const sessions = {
    crypto, sessionParameters: undefined, sessions: { add() {} },
    async getNextAvailableSessionId() { return 0x1111; },
    getPaseSession() { return undefined; },
    findResumptionRecordById() { return undefined; },
    // A stale resumption record makes CaseClient ask for resumption in Sigma1.
    findResumptionRecordByAddress() {
        return args.resume ? { sharedSecret: new Uint8Array(32).fill(7), resumptionId: new Uint8Array(16).fill(9),
                               fabric, peerNodeId: BigInt(args.peerNodeId) } : undefined;
    },
    async saveResumptionRecord() {},
    async createSecureSession(c) {
        keys = await crypto.createHkdfKey(c.sharedSecret, c.salt, Bytes.fromString("SessionKeys"), 48);
        return {};
    },
};
async function makeFabric() {
    return Fabric.create(crypto, {
        fabricIndex: 1, fabricId: BigInt(args.fabricId), nodeId: BigInt(args.nodeId),
        rootNodeId: BigInt(args.nodeId), rootPublicKey: Bytes.fromHex(args.rootPublicKey), rootVendorId: 0xFFF1,
        rootCert: Bytes.fromHex(args.rcac), operationalCert: Bytes.fromHex(args.noc),
        intermediateCACert: args.icac ? Bytes.fromHex(args.icac) : undefined,
        identityProtectionKey: Bytes.fromHex(args.epochKey),
        keyPair: { publicKey: Bytes.fromHex(args.publicKey), privateKey: Bytes.fromHex(args.privateKey) },
        label: "twin-test",
    });
}
try {
    if (args.mode === "pase") {
        await new PaseClient(sessions).pair({}, exchange, exchange.channel, args.passcode);
    } else if (args.mode === "pase-server") {
        const pbkdf = { iterations: args.iterations, salt: Bytes.fromHex(args.salt) };
        await PaseServer.fromVerificationValue(sessions, Bytes.fromHex(args.verifier), pbkdf).onNewExchange(exchange);
    } else if (args.mode === "case") {
        fabric = await makeFabric();
        await new CaseClient(sessions).pair(exchange, fabric, BigInt(args.peerNodeId));
    } else {
        fabric = await makeFabric();
        const fabrics = {
            crypto,
            async findFabricFromDestinationId(destinationId, random) {
                const candidate = await fabric.currentDestinationIdFor(fabric.nodeId, random);
                if (Bytes.areEqual(candidate, destinationId)) return fabric;
                throw new Error("FabricNotFound");
            },
        };
        await new CaseServer(sessions, fabrics).onNewExchange(exchange);
    }
    out(keys ? { done: true, keys: Bytes.toHex(Bytes.of(keys)) } : { done: true, error: "no session" });
} catch (e) {
    out({ done: true, error: String((e && e.message) || e) });
}
process.exit(0);
"""


@pytest.fixture(scope="module")
def peer_script(tmp_path_factory):
    assert (MATTERJS / "@matter" / "protocol").is_dir(), \
        f"matter.js is not installed in {MATTERJS}: run scripts/install-test-deps.sh"
    d = tmp_path_factory.mktemp("matterjs_peer")
    (d / "node_modules").symlink_to(MATTERJS)
    (d / "peer.mjs").write_text(PEER_JS)
    return d / "peer.mjs"


def drive(peer_script, ours, args, first=()):
    """Run matter.js against handshake `ours`, `first` being what we send before it speaks.

    Returns (matter.js's final line, opcodes in the order they went over the wire)."""
    p = subprocess.Popen(["node", str(peer_script), json.dumps(args)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    watchdog = threading.Timer(60, p.kill)
    watchdog.start()
    seen = []

    def send(op, payload):
        seen.append(int(op))
        p.stdin.write(json.dumps({"type": int(op), "payload": payload.hex()}) + "\n")
        p.stdin.flush()

    try:
        for op, payload in first:
            send(op, payload)
        for line in p.stdout:
            if not line.startswith("@@"):
                continue  # matter.js log output
            m = json.loads(line[2:])
            if m.get("done"):
                return m, seen
            seen.append(m["type"])
            for op, payload in ours.handle(m["type"], bytes.fromhex(m["payload"])):
                send(op, payload)
        raise AssertionError(f"matter.js peer ended without a result (exit {p.wait()})")
    finally:
        watchdog.cancel()
        p.kill()
        p.wait()


def key_hex(result):
    k = result.keys
    return (k.i2r_key + k.r2i_key + k.attestation_challenge).hex()


SALT = b"SPAKE2P Key Salt"


def test_matterjs_commissioner_completes_pase_with_our_node(peer_script):
    responder = PaseResponder(make_verifier(20202021, SALT, 1000), SALT, 1000, 0x2222)
    final, seen = drive(peer_script, responder, {"mode": "pase", "passcode": 20202021})
    assert "error" not in final, final
    assert seen == [0x20, 0x21, 0x22, 0x23, 0x24, 0x40]
    assert responder.result is not None and responder.result.peer_session_id == 0x1111
    assert final["keys"] == key_hex(responder.result)


def test_matterjs_commissioner_with_wrong_passcode_fails(peer_script):
    responder = PaseResponder(make_verifier(20202021, SALT, 1000), SALT, 1000, 0x2222)
    final, seen = drive(peer_script, responder, {"mode": "pase", "passcode": 20202022})
    assert "key confirmation" in final["error"]
    assert responder.result is None and responder.error == ProtocolCode.INVALID_PARAMETER


def case_args(ctrl, node, mode="case", **extra):
    return dict(mode=mode, fabricId=str(ctrl.fabric_id), nodeId=str(ctrl.node_id), peerNodeId=str(node.node_id),
                rootPublicKey=ctrl.root_public_key.hex(), rcac=ctrl.rcac.hex(), noc=ctrl.noc.hex(),
                icac=ctrl.icac.hex() if ctrl.icac else None, epochKey=EPOCH_KEY.hex(),
                publicKey=public_key_bytes(ctrl.operational_key).hex(),
                privateKey=ctrl.operational_key.private_numbers().private_value.to_bytes(32, "big").hex(), **extra)


@pytest.mark.parametrize("icac", [False, True], ids=["root+noc", "root+icac+noc"])
def test_matterjs_controller_completes_case_with_our_node(peer_script, icac):
    node, ctrl = make_fabric(icac=icac)
    responder = CaseResponder([node], 0x3333, rng=random.Random(5))
    final, seen = drive(peer_script, responder, case_args(ctrl, node))
    assert "error" not in final, final
    assert seen == [0x30, 0x31, 0x32, 0x40]
    assert responder.result.peer_node_id == ctrl.node_id
    assert final["keys"] == key_hex(responder.result)


def test_matterjs_resumption_request_falls_back_to_full_case(peer_script):
    node, ctrl = make_fabric()
    responder = CaseResponder([node], 0x3333)
    final, seen = drive(peer_script, responder, case_args(ctrl, node, resume=True))
    assert "error" not in final, final
    assert responder.resumption_requested and seen == [0x30, 0x31, 0x32, 0x40]
    assert final["keys"] == key_hex(responder.result)


def test_matterjs_controller_on_another_fabric_gets_no_shared_trust_roots(peer_script):
    node, _ = make_fabric(seed=1)
    _, stranger = make_fabric(seed=2)
    responder = CaseResponder([node], 0x3333)
    final, seen = drive(peer_script, responder, case_args(stranger, node))
    assert seen == [0x30, 0x40]
    assert responder.error == ProtocolCode.NO_SHARED_TRUST_ROOTS
    assert "NoSharedTrustRoots" in final["error"] or "(1)" in final["error"], final


def test_our_commissioner_completes_pase_with_a_matterjs_node(peer_script):
    verifier = make_verifier(20202021, SALT, 1000)
    args = {"mode": "pase-server", "verifier": verifier.hex(), "salt": SALT.hex(), "iterations": 1000}
    initiator = PaseInitiator(20202021, 0x4444)
    final, seen = drive(peer_script, initiator, args, first=initiator.start())
    assert "error" not in final, final
    assert seen == [0x20, 0x21, 0x22, 0x23, 0x24, 0x40]
    assert initiator.result.peer_session_id == 0x1111 and final["keys"] == key_hex(initiator.result)


def test_our_commissioner_with_wrong_passcode_is_refused_by_a_matterjs_node(peer_script):
    verifier = make_verifier(20202021, SALT, 1000)
    args = {"mode": "pase-server", "verifier": verifier.hex(), "salt": SALT.hex(), "iterations": 1000}
    initiator = PaseInitiator(20202022, 0x4444)
    final, seen = drive(peer_script, initiator, args, first=initiator.start())
    assert final == {"done": True, "error": "no session"}
    assert initiator.result is None and initiator.error == ProtocolCode.INVALID_PARAMETER


@pytest.mark.parametrize("icac", [False, True], ids=["root+noc", "root+icac+noc"])
def test_our_controller_completes_case_with_a_matterjs_node(peer_script, icac):
    node, ctrl = make_fabric(icac=icac)
    # matter.js holds the node's fabric; we are the controller.
    initiator = CaseInitiator(ctrl, node.node_id, 0x5555)
    final, seen = drive(peer_script, initiator, case_args(node, ctrl, mode="case-server"), first=initiator.start())
    assert "error" not in final, final
    assert seen == [0x30, 0x31, 0x32, 0x40]
    assert initiator.result.peer_node_id == node.node_id and final["keys"] == key_hex(initiator.result)

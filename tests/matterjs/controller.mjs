// A matter.js controller (npm @matter/main: a ServerNode commissioning ClientNode peers) that
// the tests drive over stdin/stdout, one JSON object per line each way.
//
//   {"id": 1, "op": "commission", "passcode": 20202021, "discriminator": 3840}   (or "pairingCode")
//   {"id": 2, "op": "read", "endpoint": 1, "cluster": "OnOff", "attribute": "onOff"}   a real Read
//   {"id": 3, "op": "invoke", "endpoint": 1, "cluster": "OnOff", "command": "toggle", "fields": {}}
//   {"id": 4, "op": "watch", "endpoint": 1, "cluster": "OnOff", "attribute": "onOff"}
//        then {"report": {...}} lines whenever the subscription brings a new value
//   {"id": 5, "op": "decommission"}     RemoveFabric of this controller's own fabric
//   {"id": 6, "op": "close"}
// Answers: {"id": N, "ok": true, "result": ...} or {"id": N, "ok": false, "error": "..."}.
// Usage: node controller.mjs <controller UDP port>; storage in MATTER_STORAGE_PATH.
import { Seconds, ServerNode } from "@matter/main";
import * as behaviors from "@matter/main/behaviors";
import { Read } from "@matter/main/protocol";
import readline from "node:readline";

const port = Number(process.argv[2] ?? 5600);
const print = (o) => process.stdout.write(JSON.stringify(o, (_, v) => (typeof v === "bigint" ? v.toString() : v)) + "\n");

const controller = await ServerNode.create({ id: "test-controller", network: { port } });
await controller.start();
let node;

function client(cluster) {
    const Client = behaviors[`${cluster}Client`];
    if (Client === undefined) throw new Error(`no matter.js client behaviour for cluster ${cluster}`);
    return Client;
}

function endpoint(number) {
    if (node === undefined) throw new Error("nothing commissioned yet");
    if (number === 0) return node;
    const ep = node.parts.get(number);
    if (ep === undefined) throw new Error(`the node has no endpoint ${number}`);
    return ep;
}

const ops = {
    async commission(req) {
        const options = req.pairingCode !== undefined ? { pairingCode: req.pairingCode }
            : { passcode: req.passcode, longDiscriminator: req.discriminator };
        node = await controller.peers.commission({ ...options, timeout: Seconds(90) });
        return { nodeId: String(node.peerAddress?.nodeId), endpoints: [...node.parts].map((p) => p.number),
                 vendorName: node.state.basicInformation.vendorName };
    },
    async read(req) {
        const Client = client(req.cluster);
        const request = { ...Read(Read.Attribute({ endpoint: req.endpoint, cluster: Client.cluster,
                                                   attributes: [req.attribute] })),
                          includeKnownVersions: true };   // a full answer, not "unchanged since"
        const values = [];
        for await (const chunk of endpoint(0).interaction.read(request)) {
            for await (const report of chunk) {
                values.push(report.kind === "attr-value" ? { value: report.value } : { status: report.status });
            }
        }
        return values;
    },
    async invoke(req) {
        const commands = endpoint(req.endpoint).commandsOf(client(req.cluster));
        // Commands without fields take no argument at all.
        const response = await (req.fields === undefined ? commands[req.command]() : commands[req.command](req.fields));
        return response ?? null;
    },
    async watch(req) {
        const events = endpoint(req.endpoint).eventsOf(client(req.cluster));
        events[`${req.attribute}$Changed`].on((value) => print({ report: { endpoint: req.endpoint, cluster: req.cluster,
                                                                          attribute: req.attribute, value } }));
        return endpoint(req.endpoint).stateOf(client(req.cluster))[req.attribute];
    },
    async decommission() {
        await node.decommission();
        node = undefined;
        return null;
    },
    async close() {
        await controller.close();
        print({ closed: true });
        process.exit(0);
    },
};

print({ ready: true, port });
for await (const line of readline.createInterface({ input: process.stdin })) {
    if (!line.trim()) continue;
    const req = JSON.parse(line);
    try {
        const op = ops[req.op];
        if (op === undefined) throw new Error(`unknown op ${req.op}; accepted: ${Object.keys(ops).join(", ")}`);
        print({ id: req.id, ok: true, result: await op(req) });
    } catch (error) {
        print({ id: req.id, ok: false, error: String(error?.stack ?? error) });
    }
}

// A real MCP TypeScript SDK 2.x client (@modelcontextprotocol/client, version pinned in package.json here)
// for the samples of sample_captures/ts2sdk/. Every request goes through the SDK's Client; a call is
// cancelled the SDK's way, by aborting the AbortSignal passed to callTool (the SDK then sends
// notifications/cancelled, or on a 2026-07-28 Streamable HTTP connection closes the call's stream).
// The flows only decide when to abort, triggered by what the server sent, so re-running gives the same
// message sequence.
//
// Flows (each: list the tools, one cancelled call with an onprogress callback, linger, read_ledger, and
// in 2025-11-25 a ping):
//   early     - append_ledger(steps=4): abort once the 1st progress notification (sent as the handler
//               starts) arrived. (Aborting right after callTool() sends nothing at all: the SDK checks
//               the signal before it writes the request.)
//   slow      - append_ledger(steps=4): abort once the 2nd progress notification arrived
//   ignoring  - stamp_ledger(steps=4): the same, for the tool that ignores its abort signal
//   crossing  - append_ledger(steps=1): after 0.3 s the client's event loop is kept busy for 0.9 s (the
//               result arrives meanwhile and waits unread), then it aborts: the cancel follows the result
//               on the wire, the race every canceller must tolerate
//
// Usage: node client.mjs FLOW REVISION -- SERVER_COMMAND...     (stdio: the SDK spawns the server)
//        node client.mjs FLOW REVISION --url URL                 (Streamable HTTP)
// REVISION: 2025-11-25 (the SDK's default 'legacy' negotiation: initialize) or 2026-07-28
// (versionNegotiation pinned to it: server/discover, then per-request _meta).
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const LINGER_MS = 2000;
const note = text => process.stderr.write(`[ts2-client ${(Date.now() / 1000).toFixed(3)}] ${text}\n`);
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

function afterProgress(n, onReached) {
    let seen = 0;
    return p => {
        note(`progress ${p.progress}/${p.total}: ${p.message}`);
        if (++seen === n) onReached();
    };
}

async function cancelledCall(client, name, args, arm) {
    const caller = new AbortController();
    const abort = why => {
        note(`aborting the call: ${why}`);
        caller.abort(why);
    };
    const call = client.callTool({ name, arguments: args }, { signal: caller.signal, onprogress: arm.onprogress?.(abort) });
    arm.afterSend?.(abort);
    try {
        note(`result: ${JSON.stringify(await call)}`);
    } catch (error) {
        note(`call ended: ${error.name}: ${error.message}`);
    }
}

function busy(ms) {
    const until = Date.now() + ms;
    while (Date.now() < until) {
        // the event loop is blocked: whatever the server sends waits unread in the socket or pipe
    }
}

const FLOWS = {
    early: client =>
        cancelledCall(client, 'append_ledger', { entry: 'early', steps: 4 }, { onprogress: abort => afterProgress(1, () => abort('the caller gave up at once')) }),
    slow: client =>
        cancelledCall(client, 'append_ledger', { entry: 'slow', steps: 4 }, { onprogress: abort => afterProgress(2, () => abort('the caller gave up')) }),
    ignoring: client =>
        cancelledCall(client, 'stamp_ledger', { entry: 'stamp', steps: 4 }, { onprogress: abort => afterProgress(2, () => abort('the caller gave up')) }),
    crossing: client =>
        cancelledCall(
            client,
            'append_ledger',
            { entry: 'crossing', steps: 1 },
            {
                onprogress: () => afterProgress(99, () => {}),
                afterSend: abort =>
                    setTimeout(() => {
                        busy(900);
                        abort('the caller gave up just as the result arrived');
                    }, 300)
            }
        )
};

const [flow, revision, how, target, ...args] = process.argv.slice(2);
if (!(flow in FLOWS) || !['2025-11-25', '2026-07-28'].includes(revision) || !['--', '--url'].includes(how) || !target) {
    process.stderr.write('usage: node client.mjs FLOW REVISION -- SERVER_COMMAND... | FLOW REVISION --url URL\n');
    process.exit(2);
}
const watchdog = setTimeout(() => {
    note('30 s watchdog: giving up');
    process.exit(1);
}, 30000);
const options = revision === '2026-07-28' ? { versionNegotiation: { mode: { pin: revision } } } : {};
const client = new Client({ name: 'cancelwire-ts2-sample-client', version: '1.0' }, options);
client.onerror = error => note(`SDK error: ${error.message}`);
await client.connect(
    how === '--url'
        ? new StreamableHTTPClientTransport(new URL(target))
        : new StdioClientTransport({ command: target, args, env: process.env, stderr: 'inherit' })
);
note(`connected, protocol ${client.getNegotiatedProtocolVersion()}`);
await client.listTools();
await FLOWS[flow](client);
await sleep(flow === 'ignoring' ? LINGER_MS + 1000 : LINGER_MS);
note(`read_ledger: ${JSON.stringify((await client.callTool({ name: 'read_ledger', arguments: {} })).content)}`);
if (revision === '2025-11-25') await client.ping(); // 2026-07-28 has no ping (the SDK refuses to send it)
await client.close();
clearTimeout(watchdog);
note('session closed');

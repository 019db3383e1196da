// A real MCP TypeScript SDK client driving task-augmented calls (protocol 2025-11-25) over stdio, for the
// task samples, over stdio or Streamable HTTP. Runs from the pinned npm folder of scripts/record_task_samples.py. Every request goes
// through the SDK's Client and its experimental task API (client.experimental.tasks.callToolStream,
// cancelTask, getTask, getTaskResult); the flows only decide when to call what, triggered by the
// server's n-th progress notification, so re-running gives the same message sequence.
//
// Flows:
//   cancel-working   - export_ledger(steps=6) through callToolStream with an onprogress callback; after the
//                      2nd progress, cancelTask; the stream ends on its next poll; then getTask and
//                      getTaskResult, and getTask again once the work would have ended.
//   cancel-completed - export_ledger(steps=1) through callToolStream to its result, then cancelTask of the
//                      completed task (the spec wants -32602).
//   caller-abort     - export_ledger(steps=6) through callToolStream with an AbortSignal; the caller aborts
//                      after the 2nd progress. Records what the SDK sends then.
//   result-timeout   - export_ledger(steps=6) created as a task with client.request, then getTaskResult with
//                      the SDK's request timeout of 800 ms (the task needs 1.8 s). Records what it sends.
//
// Usage: node task_ts_client.mjs FLOW -- SERVER_COMMAND...
//        node task_ts_client.mjs FLOW --url URL
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';

const WORK_MS = 6 * 300;
const LINGER_MS = 1000;
const note = text => process.stderr.write(`[ts-task-client ${(Date.now() / 1000).toFixed(3)}] ${text}\n`);
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

function afterProgress(n) {
    let seen = 0;
    let fire;
    const reached = new Promise(resolve => (fire = resolve));
    const onprogress = p => {
        note(`progress ${p.progress}/${p.total}: ${p.message}`);
        if (++seen === n) fire();
    };
    return { onprogress, reached };
}

async function drain(stream, onCreated = () => {}) {
    let last;
    for await (const message of stream) {
        if (message.type === 'taskCreated') {
            onCreated(message.task.taskId);
            note(`task ${message.task.taskId} created`);
        } else if (message.type === 'taskStatus') {
            note(`polled: ${message.task.status}`);
        } else if (message.type === 'result') {
            note(`result: ${JSON.stringify(message.result)}`);
        } else {
            note(`stream error: ${message.error.message}`);
        }
        last = message;
    }
    return last;
}

async function showResult(client, taskId) {
    try {
        note(`tasks/result: ${JSON.stringify(await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema))}`);
    } catch (error) {
        note(`tasks/result error ${error.code}: ${error.message}`);
    }
}

const FLOWS = {
    async 'cancel-working'(client) {
        const { onprogress, reached } = afterProgress(2);
        let taskId;
        const stream = client.experimental.tasks.callToolStream(
            { name: 'export_ledger', arguments: { steps: 6 } },
            CallToolResultSchema,
            { task: { ttl: 60000 }, onprogress }
        );
        const drained = drain(stream, id => (taskId = id));
        await reached;
        const cancelled = await client.experimental.tasks.cancelTask(taskId);
        note(`tasks/cancel answered: status ${cancelled.status}`);
        await drained;
        note(`tasks/get: ${(await client.experimental.tasks.getTask(taskId)).status}`);
        await showResult(client, taskId);
        await sleep(WORK_MS + LINGER_MS);
        note(`tasks/get after the work's end: ${(await client.experimental.tasks.getTask(taskId)).status}`);
    },
    async 'cancel-completed'(client) {
        let taskId;
        const stream = client.experimental.tasks.callToolStream(
            { name: 'export_ledger', arguments: { steps: 1 } },
            CallToolResultSchema,
            { task: { ttl: 60000 } }
        );
        await drain(stream, id => (taskId = id));
        try {
            const cancelled = await client.experimental.tasks.cancelTask(taskId);
            note(`tasks/cancel of a completed task answered with status ${cancelled.status}`);
        } catch (error) {
            note(`tasks/cancel of a completed task: error ${error.code}: ${error.message}`);
        }
    },
    async 'caller-abort'(client) {
        const { onprogress, reached } = afterProgress(2);
        const caller = new AbortController();
        const stream = client.experimental.tasks.callToolStream(
            { name: 'export_ledger', arguments: { steps: 6 } },
            CallToolResultSchema,
            { task: { ttl: 60000 }, onprogress, signal: caller.signal }
        );
        const drained = drain(stream);
        await reached;
        caller.abort('the caller gave up');
        note('the caller aborted');
        await drained;
        await sleep(WORK_MS + LINGER_MS);
    },
    async 'result-timeout'(client) {
        const created = await client.request(
            { method: 'tools/call', params: { name: 'export_ledger', arguments: { steps: 6 } } },
            CreateTaskResultSchema,
            { task: { ttl: 60000 } }
        );
        note(`task ${created.task.taskId} created`);
        try {
            await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema, { timeout: 800 });
            note('tasks/result answered before the timeout');
        } catch (error) {
            note(`the caller gave up: error ${error.code}: ${error.message}`);
        }
        await sleep(WORK_MS + LINGER_MS);
    }
};

const [flow, how, command, ...args] = process.argv.slice(2);
if (!(flow in FLOWS) || !['--', '--url'].includes(how) || !command) {
    process.stderr.write('usage: node task_ts_client.mjs FLOW -- SERVER_COMMAND... | FLOW --url URL\n');
    process.exit(2);
}
const watchdog = setTimeout(() => {
    note('30 s watchdog: giving up');
    process.exit(1);
}, 30000);
const client = new Client({ name: 'cancelwire-ts-task-client', version: '1.0' });
await client.connect(
    how === '--url'
        ? new StreamableHTTPClientTransport(new URL(command))
        : new StdioClientTransport({ command, args, env: process.env, stderr: 'inherit' })
);
note(`initialized: server tasks capability ${JSON.stringify(client.getServerCapabilities().tasks)}`);
await client.listTools();
await FLOWS[flow](client);
await client.close();
clearTimeout(watchdog);
note('session closed');

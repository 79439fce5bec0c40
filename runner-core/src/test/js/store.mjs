// Model management on a temporary store through the official ollama client: create (from an uploaded GGUF blob, and derived
// from the created model), list, copy, delete, and a created model's PARAMETERs honoured when it generates.
//
//   node store.mjs BASE_URL GGUF_PATH
//
// The server must serve an empty store (no --model). Prints one line per check and exits 1 when any fails. Run by
// JsClientLibrariesTest.
import { Ollama } from 'ollama';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';

const [baseUrl, gguf] = process.argv.slice(2);
if (!baseUrl || !gguf) {
    console.error('usage: node store.mjs BASE_URL GGUF_PATH');
    process.exit(2);
}
const ollama = new Ollama({ host: baseUrl });

let failures = 0;
function check(name, ok, detail) {
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${ok ? '' : ': ' + detail}`);
    if (!ok) failures++;
}
const names = async () => (await ollama.list()).models.map(m => m.name).sort();

// As Ollama's own CLI does (the client refuses a local path in from): upload the GGUF as a blob, then create from it.
const bytes = await readFile(gguf);
const digest = 'sha256:' + createHash('sha256').update(bytes).digest('hex');
const head = await fetch(`${baseUrl}/api/blobs/${digest}`, { method: 'HEAD' });
check('HEAD /api/blobs: not there yet', head.status === 404, head.status);
const upload = await fetch(`${baseUrl}/api/blobs/${digest}`, { method: 'POST', body: bytes });
check('POST /api/blobs stores the blob', upload.status === 201, upload.status);
const wrong = await fetch(`${baseUrl}/api/blobs/sha256:${'0'.repeat(64)}`, { method: 'POST', body: bytes });
check('POST /api/blobs refuses content of another digest', wrong.status === 400, wrong.status);
const created = await ollama.create({ model: 'tiny:story', files: { 'stories260K.gguf': digest }, parameters: { temperature: 0, num_predict: 5 }, system: 'Once upon a time' });
check('create from a GGUF file (not streamed)', created.status === 'success', JSON.stringify(created));
const statuses = [];
for await (const part of await ollama.create({ model: 'tiny:short', from: 'tiny:story', parameters: { num_predict: 3 }, stream: true })) {
    statuses.push(part.status);
}
check('create derived from a store model, streamed: status lines ending in success', statuses.length > 1 && statuses.at(-1) === 'success',
    JSON.stringify(statuses));
check('list shows both', JSON.stringify(await names()) === JSON.stringify(['tiny:short', 'tiny:story']), JSON.stringify(await names()));

const story = await ollama.generate({ model: 'tiny:story', prompt: 'there was', stream: false });
check('the created model\'s num_predict is honoured', story.eval_count === 5, JSON.stringify(story));
const short = await ollama.generate({ model: 'tiny:short', prompt: 'there was', stream: false });
check('the derived model overrides num_predict, keeps temperature 0 and SYSTEM', short.eval_count === 3
    && story.response.startsWith(short.response), `${JSON.stringify(short.response)} vs ${JSON.stringify(story.response)}`);

const copied = await ollama.copy({ source: 'tiny:story', destination: 'tiny:copy' });
check('copy', copied.status === 'success', JSON.stringify(copied));
await ollama.delete({ model: 'tiny:story' });
check('delete leaves the others', JSON.stringify(await names()) === JSON.stringify(['tiny:copy', 'tiny:short']), JSON.stringify(await names()));
const again = await ollama.generate({ model: 'tiny:copy', prompt: 'there was', stream: false });
check('the copy generates what the deleted original did', again.response === story.response, JSON.stringify(again.response));

let error = '';
try {
    await ollama.create({ model: 'tiny:bad', modelfile: 'FROM /no/such/model.gguf' });   // the legacy form
} catch (e) {
    error = String(e.message ?? e);
}
check('a missing FROM file is an error naming it', error.includes('/no/such/model.gguf'), error);
error = '';
try {
    await ollama.pull({ model: 'llama3.2' });
} catch (e) {
    error = String(e.message ?? e);
}
check('pull answers at once that no registry is reached', error.includes('registry.ollama.ai'), error);

for (const m of ['tiny:copy', 'tiny:short']) await ollama.delete({ model: m });
check('everything deleted', (await names()).every(n => !n.startsWith('tiny:')), JSON.stringify(await names()));

process.exit(failures === 0 ? 0 : 1);

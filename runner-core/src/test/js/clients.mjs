// Forkpoint's server driven by the official JavaScript clients: ollama, openai and @anthropic-ai/sdk.
//
//   node clients.mjs BASE_URL MODEL [THINKING_MODEL THINKING ANSWER]
//
// With THINKING_MODEL (a model whose every reply is "<think>THINKING</think>ANSWER"), each client must also read the
// thinking apart from the answer: ollama's message.thinking, openai's reasoning_content, @anthropic-ai/sdk's thinking
// blocks, streamed and not.
//
// Every check compares what one client saw with what another saw (or with the same call streamed), so a server that
// answers in the wrong shape, drops pieces of a stream or reports usage inconsistently fails here. Prints one line per
// check and exits 1 when any fails. Run by ServerJsClientsTest against a live server on an ephemeral port.
import { Ollama } from 'ollama';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { z } from 'zod';
import { zodFunction, zodResponseFormat } from 'openai/helpers/zod';

const [baseUrl, alias, thinkingModel, expectedThinking, expectedAnswer] = process.argv.slice(2);
if (!baseUrl || !alias) {
    console.error('usage: node clients.mjs BASE_URL MODEL_ALIAS');
    process.exit(2);
}

const MAX_TOKENS = 24;
const ollama = new Ollama({ host: baseUrl });
const openai = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: 'unused', maxRetries: 0 });
const anthropic = new Anthropic({ baseURL: baseUrl, apiKey: 'unused', maxRetries: 0 });

let failures = 0;
function check(name, ok, detail) {
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${ok ? '' : ': ' + detail}`);
    if (!ok) failures++;
}
function same(name, a, b) {
    check(name, JSON.stringify(a) === JSON.stringify(b), `${JSON.stringify(a)} != ${JSON.stringify(b)}`);
}

const messages = [{ role: 'user', content: 'Once upon a time' }];
const prompt = 'Once upon a time, there was a little';

// --- Ollama ---
const version = await ollama.version();
check('ollama version', typeof version.version === 'string' && version.version.length > 0, JSON.stringify(version));
const tags = await ollama.list();
// the server lists the model under one name (the alias given on the command line is one of the names it answers to)
const listed = tags.models.find(m => m.name.startsWith(alias) && m.name !== thinkingModel);
check('ollama list names the model', listed !== undefined, JSON.stringify(tags));
const model = listed ? listed.name : alias;
const byAlias = await ollama.generate({ model: alias, prompt: 'x', raw: true, stream: false, options: { num_predict: 1 } });
check('the alias answers too', byAlias.done === true, JSON.stringify(byAlias));

const oChat = await ollama.chat({ model, messages, stream: false, options: { temperature: 0, num_predict: MAX_TOKENS } });
check('ollama chat done', oChat.done === true && ['stop', 'length'].includes(oChat.done_reason), JSON.stringify(oChat));
check('ollama chat counts', oChat.eval_count > 0 && oChat.prompt_eval_count > 0 && oChat.total_duration > 0, JSON.stringify(oChat));
let streamed = '', last = null;
for await (const part of await ollama.chat({ model, messages, stream: true, options: { temperature: 0, num_predict: MAX_TOKENS } })) {
    streamed += part.message.content;
    last = part;
}
same('ollama chat streamed == not streamed', streamed, oChat.message.content);
check('ollama chat stream ends done', last && last.done === true && last.eval_count === oChat.eval_count, JSON.stringify(last));

const oGen = await ollama.generate({ model, prompt, raw: true, stream: false, options: { temperature: 0, num_predict: MAX_TOKENS } });
let genStreamed = '';
for await (const part of await ollama.generate({ model, prompt, raw: true, stream: true, options: { temperature: 0, num_predict: MAX_TOKENS } })) {
    genStreamed += part.response;
}
same('ollama generate streamed == not streamed', genStreamed, oGen.response);

const shown = await ollama.show({ model });
check('ollama show has details', shown.details && typeof shown.details.family === 'string', JSON.stringify(shown.details));
const ps = await ollama.ps();
check('ollama ps lists the loaded model', ps.models.some(m => m.name === model || m.model === model), JSON.stringify(ps));

// --- OpenAI ---
const models = await openai.models.list();
check('openai models list the model', models.data.some(m => m.id === model), JSON.stringify(models.data));
const cc = await openai.chat.completions.create({ model, messages, max_tokens: MAX_TOKENS, temperature: 0 });
same('openai chat == ollama chat (greedy)', cc.choices[0].message.content, oChat.message.content);
check('openai chat usage', cc.usage.completion_tokens === oChat.eval_count
    && cc.usage.total_tokens === cc.usage.prompt_tokens + cc.usage.completion_tokens
    && typeof cc.usage.prompt_tokens_details?.cached_tokens === 'number', JSON.stringify(cc.usage));
const ccStream = await openai.chat.completions.create({
    model, messages, max_tokens: MAX_TOKENS, temperature: 0, stream: true, stream_options: { include_usage: true },
});
let ccText = '', ccUsage = null, ccFinish = null;
for await (const chunk of ccStream) {
    if (chunk.choices.length > 0) {
        ccText += chunk.choices[0].delta?.content ?? '';
        ccFinish = chunk.choices[0].finish_reason ?? ccFinish;
    }
    if (chunk.usage) ccUsage = chunk.usage;
}
same('openai chat streamed == not streamed', ccText, cc.choices[0].message.content);
same('openai stream finish_reason', ccFinish, cc.choices[0].finish_reason);
check('openai stream usage chunk', ccUsage && ccUsage.completion_tokens === cc.usage.completion_tokens
    && ccUsage.prompt_tokens === cc.usage.prompt_tokens, JSON.stringify(ccUsage));

const comp = await openai.completions.create({ model, prompt, max_tokens: MAX_TOKENS, temperature: 0 });
same('openai completion == ollama raw generate (greedy)', comp.choices[0].text, oGen.response);
let compText = '';
for await (const chunk of await openai.completions.create({ model, prompt, max_tokens: MAX_TOKENS, temperature: 0, stream: true })) {
    compText += chunk.choices[0]?.text ?? '';
}
same('openai completion streamed == not streamed', compText, comp.choices[0].text);

// --- log-probabilities, as each client reads them ---
const lpChat = await openai.chat.completions.create({ model, messages, max_tokens: 8, temperature: 0, logprobs: true, top_logprobs: 3 });
const lpContent = lpChat.choices[0].logprobs?.content ?? [];
check('openai chat logprobs: one entry per token', lpContent.length === lpChat.usage.completion_tokens, JSON.stringify(lpChat.choices[0].logprobs));
check('openai chat logprobs: entries spell the reply', lpContent.map(e => e.token).join('') === lpChat.choices[0].message.content,
    JSON.stringify(lpContent.map(e => e.token)));
check('openai chat logprobs: greedy token leads its sorted top list', lpContent.every(e => e.logprob <= 0 && e.top_logprobs.length === 3
    && e.top_logprobs[0].logprob === e.logprob && e.top_logprobs.every((t, i, a) => i === 0 || a[i - 1].logprob >= t.logprob)
    && JSON.stringify(e.bytes) === JSON.stringify([...Buffer.from(e.token, 'utf8')])), JSON.stringify(lpContent[0]));
const lpStreamed = [];
for await (const chunk of await openai.chat.completions.create({
    model, messages, max_tokens: 8, temperature: 0, logprobs: true, top_logprobs: 3, stream: true })) {
    if (chunk.choices.length > 0 && chunk.choices[0].logprobs?.content) lpStreamed.push(...chunk.choices[0].logprobs.content);
}
same('openai chat logprobs streamed == not streamed', lpStreamed, lpContent);
const lpOllama = await ollama.chat({ model, messages, stream: false, logprobs: true, top_logprobs: 3, options: { temperature: 0, num_predict: 8 } });
same('ollama chat logprobs == openai chat logprobs', (lpOllama.logprobs ?? []).map(e => [e.token, e.logprob, e.top_logprobs.map(t => t.logprob)]),
    lpContent.map(e => [e.token, e.logprob, e.top_logprobs.map(t => t.logprob)]));
const lpComp = await openai.completions.create({ model, prompt, max_tokens: 8, temperature: 0, logprobs: 2 });
const lpc = lpComp.choices[0].logprobs;
check('openai completion logprobs: tokens spell the text, offsets ascend', lpc && lpc.tokens.join('') === lpComp.choices[0].text
    && lpc.token_logprobs.length === lpc.tokens.length && lpc.top_logprobs.every(m => Object.keys(m).length === 2)
    && lpc.text_offset.every((o, i, a) => i === 0 ? o === 0 : o === a[i - 1] + lpc.tokens[i - 1].length), JSON.stringify(lpc));

// --- Anthropic ---
const msg = await anthropic.messages.create({ model, max_tokens: MAX_TOKENS, temperature: 0, messages });
const msgText = msg.content.filter(b => b.type === 'text').map(b => b.text).join('');
same('anthropic message == ollama chat (greedy)', msgText, oChat.message.content);
check('anthropic stop_reason', ['end_turn', 'max_tokens', 'stop_sequence'].includes(msg.stop_reason), msg.stop_reason);
check('anthropic usage', msg.usage.output_tokens === oChat.eval_count
    && msg.usage.input_tokens + (msg.usage.cache_read_input_tokens ?? 0) === cc.usage.prompt_tokens, JSON.stringify(msg.usage));
const stream = anthropic.messages.stream({ model, max_tokens: MAX_TOKENS, temperature: 0, messages });
let anthText = '';
stream.on('text', t => { anthText += t; });
const final = await stream.finalMessage();
same('anthropic streamed == not streamed', anthText, msgText);
same('anthropic stream final message text', final.content.filter(b => b.type === 'text').map(b => b.text).join(''), msgText);
same('anthropic stream output_tokens', final.usage.output_tokens, msg.usage.output_tokens);
const counted = await anthropic.messages.countTokens({ model, messages });
same('anthropic count_tokens == openai prompt_tokens', counted.input_tokens, cc.usage.prompt_tokens);

// --- thinking, as each client reads it ---
if (thinkingModel) {
    const tm = thinkingModel;
    const T = expectedThinking, A = expectedAnswer;
    const hi = [{ role: 'user', content: 'Hi' }];
    const oThink = await ollama.chat({ model: tm, messages: hi, think: true, stream: false, options: { temperature: 0 } });
    same('ollama chat message.thinking', [oThink.message.thinking, oThink.message.content], [T, A]);
    let oT = '', oC = '', oParts = 0;
    for await (const part of await ollama.chat({ model: tm, messages: hi, think: true, stream: true, options: { temperature: 0 } })) {
        oT += part.message.thinking ?? '';
        oC += part.message.content;
        if (part.message.thinking) oParts++;
    }
    same('ollama chat streamed thinking and content', [oT, oC], [T, A]);
    check('ollama chat thinking streams in pieces', oParts >= 2, `${oParts} pieces`);
    const oGenThink = await ollama.generate({ model: tm, prompt: 'Hi', think: 'high', stream: false, options: { temperature: 0 } });
    same('ollama generate thinking', [oGenThink.thinking, oGenThink.response], [T, A]);
    const oAgain = await ollama.chat({ model: tm, think: true, stream: false, options: { temperature: 0 },
        messages: [...hi, { role: 'assistant', content: oThink.message.content, thinking: oThink.message.thinking }, { role: 'user', content: 'And?' }] });
    same('ollama chat with thinking in the history', [oAgain.message.thinking, oAgain.message.content], [T, A]);
    const shownThinking = await ollama.show({ model: tm });
    check('ollama show: thinking capability', (shownThinking.capabilities ?? []).includes('thinking'), JSON.stringify(shownThinking.capabilities));

    const ccThink = await openai.chat.completions.create({ model: tm, messages: hi, temperature: 0, reasoning_effort: 'high' });
    same('openai chat reasoning_content', [ccThink.choices[0].message.reasoning_content, ccThink.choices[0].message.content], [T, A]);
    let cT = '', cC = '';
    for await (const chunk of await openai.chat.completions.create({ model: tm, messages: hi, temperature: 0, stream: true })) {
        if (chunk.choices.length > 0) {
            cT += chunk.choices[0].delta?.reasoning_content ?? '';
            cC += chunk.choices[0].delta?.content ?? '';
        }
    }
    same('openai chat streamed reasoning_content and content', [cT, cC], [T, A]);
    const ccAgain = await openai.chat.completions.create({ model: tm, temperature: 0, messages: [...hi,
        { role: 'assistant', content: ccThink.choices[0].message.content, reasoning_content: ccThink.choices[0].message.reasoning_content },
        { role: 'user', content: 'And?' }] });
    same('openai chat with reasoning_content in the history', ccAgain.choices[0].message.content, A);

    const thinkingOn = { type: 'enabled', budget_tokens: 1024 };
    const mThink = await anthropic.messages.create({ model: tm, max_tokens: 2048, temperature: 0, thinking: thinkingOn, messages: hi });
    check('anthropic thinking block, then text', mThink.content.length === 2 && mThink.content[0].type === 'thinking'
        && mThink.content[0].thinking === T && typeof mThink.content[0].signature === 'string'
        && mThink.content[1].type === 'text' && mThink.content[1].text === A, JSON.stringify(mThink.content));
    const mStream = anthropic.messages.stream({ model: tm, max_tokens: 2048, temperature: 0, thinking: thinkingOn, messages: hi });
    let aT = '', aC = '';
    mStream.on('thinking', d => { aT += d; });
    mStream.on('text', t => { aC += t; });
    const mFinal = await mStream.finalMessage();
    same('anthropic streamed thinking_delta and text', [aT, aC], [T, A]);
    same('anthropic stream final message blocks', mFinal.content.map(b => [b.type, b.thinking ?? b.text]), mThink.content.map(b => [b.type, b.thinking ?? b.text]));
    const mAgain = await anthropic.messages.create({ model: tm, max_tokens: 2048, temperature: 0, thinking: thinkingOn,
        messages: [...hi, { role: 'assistant', content: mThink.content }, { role: 'user', content: 'And?' }] });
    same('anthropic with a thinking block in the history', mAgain.content.map(b => b.type), ['thinking', 'text']);
}

// --- embeddings: the same vectors through both clients ---
const norm = v => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const maxDiff = (a, b) => a.length !== b.length ? Infinity : Math.max(...a.map((x, i) => Math.abs(x - b[i])));
const texts = ['Once upon a time', 'The little dog'];
const oEmbed = await ollama.embed({ model, input: texts });
const dim = oEmbed.embeddings[0]?.length ?? 0;
check('ollama embed: one vector per input, the model\'s length', oEmbed.embeddings.length === 2 && dim > 0
    && oEmbed.embeddings.every(v => v.length === dim) && oEmbed.prompt_eval_count > 0, JSON.stringify(oEmbed).slice(0, 300));
check('ollama embed: unit vectors', oEmbed.embeddings.every(v => Math.abs(norm(v) - 1) < 1e-5), oEmbed.embeddings.map(norm).join(' '));
const oOne = await ollama.embed({ model, input: texts[1] });
check('ollama embed: a batch equals its inputs one by one', maxDiff(oOne.embeddings[0], oEmbed.embeddings[1]) === 0, maxDiff(oOne.embeddings[0], oEmbed.embeddings[1]));
const oLegacy = await ollama.embeddings({ model, prompt: texts[0] });
const legacyNorm = norm(oLegacy.embedding);
check('ollama embeddings (legacy): the raw vector, normalised it is embed\'s', oLegacy.embedding.length === dim
    && maxDiff(oLegacy.embedding.map(x => x / legacyNorm), oEmbed.embeddings[0]) < 1e-6, `norm ${legacyNorm}`);
const aEmbed = await openai.embeddings.create({ model, input: texts });   // the client asks for base64 and decodes it
check('openai embeddings.create: list of embeddings with usage', aEmbed.data.length === 2 && aEmbed.data.every((d, i) => d.index === i)
    && aEmbed.usage.prompt_tokens === oEmbed.prompt_eval_count && aEmbed.usage.total_tokens === aEmbed.usage.prompt_tokens,
    JSON.stringify(aEmbed.usage));
check('openai embeddings == ollama embed', aEmbed.data.every((d, i) => maxDiff(Array.from(d.embedding), oEmbed.embeddings[i]) < 1e-6),
    aEmbed.data.map((d, i) => maxDiff(Array.from(d.embedding), oEmbed.embeddings[i])).join(' '));
const aFloat = await openai.embeddings.create({ model, input: texts[0], encoding_format: 'float' });
check('openai embeddings as floats == as base64', maxDiff(aFloat.data[0].embedding, Array.from(aEmbed.data[0].embedding)) < 1e-6, '');
const oDims = await ollama.embed({ model, input: texts[0], dimensions: 8 });
const aDims = await openai.embeddings.create({ model, input: texts[0], dimensions: 8, encoding_format: 'float' });
check('dimensions 8: the first 8 components renormalised, on both', oDims.embeddings[0].length === 8 && Math.abs(norm(oDims.embeddings[0]) - 1) < 1e-5
    && maxDiff(aDims.data[0].embedding, oDims.embeddings[0]) < 1e-6
    && maxDiff(oDims.embeddings[0], oEmbed.embeddings[0].slice(0, 8).map(x => x / norm(oEmbed.embeddings[0].slice(0, 8)))) < 1e-6,
    JSON.stringify(oDims.embeddings[0]));

// --- structured outputs: each client's own way of asking for a schema, the reply checked by zod ---
const Pet = z.object({
    name: z.string().max(10), age: z.number().int(), kind: z.enum(['cat', 'dog', 'bird']),
    tags: z.array(z.string().max(5)).max(2), owner: z.string().max(8).nullable(),
});
const petFormat = zodResponseFormat(Pet, 'pet');
const petSchema = petFormat.json_schema.schema;
const SO_TOKENS = 200;
const oPetReply = await ollama.chat({ model, messages, format: petSchema, stream: false, options: { temperature: 0, num_predict: SO_TOKENS } });
const oPet = Pet.safeParse(JSON.parse(oPetReply.message.content));
check('ollama format: schema → a valid object', oPetReply.done_reason === 'stop' && oPet.success, oPetReply.message.content);
let oPetStreamed = '';
for await (const part of await ollama.chat({ model, messages, format: petSchema, stream: true, options: { temperature: 0, num_predict: SO_TOKENS } })) {
    oPetStreamed += part.message.content;
}
same('ollama format: schema streamed == not streamed', oPetStreamed, oPetReply.message.content);
const oJson = await ollama.generate({ model, prompt, format: 'json', stream: false, options: { temperature: 0, num_predict: 16 } });
check('ollama format: "json" → an object (or its start, cut by num_predict)', oJson.response.trimStart().startsWith('{')
    && (oJson.done_reason === 'length' || typeof JSON.parse(oJson.response) === 'object'), JSON.stringify(oJson));

const parsedPet = await openai.chat.completions.parse({ model, messages, temperature: 0, max_tokens: SO_TOKENS, response_format: petFormat });
check('openai zodResponseFormat + parse → message.parsed', Pet.safeParse(parsedPet.choices[0].message.parsed).success,
    JSON.stringify(parsedPet.choices[0].message));
same('openai parsed == ollama format (greedy, same schema)', parsedPet.choices[0].message.parsed, oPet.data);
const petStream = openai.chat.completions.stream({ model, messages, temperature: 0, max_tokens: SO_TOKENS, response_format: petFormat });
const petStreamed = await petStream.finalChatCompletion();
same('openai structured stream → the same parsed object', petStreamed.choices[0].message.parsed, parsedPet.choices[0].message.parsed);

const Weather = z.object({ city: z.string().max(10), unit: z.enum(['C', 'F']) });
const forcedCall = await openai.chat.completions.parse({
    model, messages, temperature: 0, max_tokens: SO_TOKENS, tools: [zodFunction({ name: 'get_weather', parameters: Weather })],
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
});
const call = forcedCall.choices[0].message.tool_calls?.[0];
check('openai forced tool (zodFunction) → parsed_arguments', forcedCall.choices[0].finish_reason === 'tool_calls'
    && call?.function.name === 'get_weather' && Weather.safeParse(call.function.parsed_arguments).success, JSON.stringify(forcedCall.choices[0]));

const weatherSchema = zodFunction({ name: 'get_weather', parameters: Weather }).function.parameters;
const toolMsg = await anthropic.messages.create({
    model, max_tokens: SO_TOKENS, temperature: 0, messages,
    tools: [{ name: 'get_weather', description: 'The weather in a city', input_schema: weatherSchema }],
    tool_choice: { type: 'tool', name: 'get_weather' },
});
const toolUse = toolMsg.content.find(b => b.type === 'tool_use');
check('anthropic forced tool → a tool_use block with valid input', toolMsg.stop_reason === 'tool_use' && toolUse?.name === 'get_weather'
    && Weather.safeParse(toolUse.input).success, JSON.stringify(toolMsg.content));
const toolStream = anthropic.messages.stream({
    model, max_tokens: SO_TOKENS, temperature: 0, messages,
    tools: [{ name: 'get_weather', description: 'The weather in a city', input_schema: weatherSchema }], tool_choice: { type: 'any' },
});
const toolFinal = await toolStream.finalMessage();
same('anthropic forced tool streamed == not streamed', toolFinal.content.find(b => b.type === 'tool_use')?.input, toolUse?.input);

// --- errors in each API's own shape ---
try {
    await anthropic.messages.create({ model: 'no-such-model', max_tokens: 4, messages });
    check('anthropic unknown model fails', false, 'no error');
} catch (e) {
    check('anthropic unknown model → 404 not_found_error', e.status === 404 && e.error?.error?.type === 'not_found_error', `${e.status} ${JSON.stringify(e.error)}`);
}
try {
    await openai.chat.completions.create({ model: 'no-such-model', messages });
    check('openai unknown model fails', false, 'no error');
} catch (e) {
    check('openai unknown model → 404 with message', e.status === 404 && typeof e.error?.message === 'string', `${e.status} ${JSON.stringify(e.error)}`);
}
try {
    await ollama.chat({ model: 'no-such-model', messages });
    check('ollama unknown model fails', false, 'no error');
} catch (e) {
    check('ollama unknown model → 404', e.status_code === 404 && /no-such-model/.test(e.error ?? e.message), `${e.status_code} ${e.message}`);
}

console.log(failures === 0 ? 'all client checks passed' : `${failures} client checks failed`);
process.exit(failures === 0 ? 0 : 1);

// genai-prices.mjs converts the price data bundled in the npm package
// @pydantic/genai-prices (MIT) into LiteLLM's model_prices_and_context_window.json
// shape, for the providers llmrun speaks. It is how the committed snapshot
// was built where LiteLLM's own file could not be fetched; `go generate`
// (pricing/gen) refreshes from LiteLLM where the network allows.
//
//   npm pack @pydantic/genai-prices@0.1.8 && tar xzf pydantic-genai-prices-0.1.8.tgz
//   node pricing/gen/genai-prices.mjs package/dist/index.js 2026-09-23 > /tmp/litellm-shape.json
//   go run ./pricing/gen -in /tmp/litellm-shape.json -date 2026-09-23 \
//     -source "@pydantic/genai-prices 0.1.8 (npm, MIT), converted by pricing/gen/genai-prices.mjs" -o pricing/snapshot.json
//
// Only explicit data is carried over: a model's id and its "equals" names,
// plus "starts_with"/"contains" names that are whole model names (names
// with ':' or a trailing '-' are patterns, not models, and are dropped) (pricing's
// lookup strips dated suffixes itself). Time-constrained prices take the last
// one in force on DATE. Tiered prices become LiteLLM's _above_Nk_tokens rates.
import { pathToFileURL } from 'node:url';

const [, , bundle, date] = process.argv;
if (!bundle || !/^\d{4}-\d{2}-\d{2}$/.test(date ?? '')) {
  console.error('usage: node genai-prices.mjs PATH/TO/dist/index.js YYYY-MM-DD');
  process.exit(2);
}
const { findProvider } = await import(pathToFileURL(bundle).href);

// genai-prices provider id → LiteLLM provider and key prefix.
const PROVIDERS = { openai: ['openai', ''], anthropic: ['anthropic', ''], google: ['gemini', 'gemini/'], azure: ['azure', 'azure/'] };
// Not chat or embedding models (audio, images, realtime, moderation).
const SKIP = /(tts|transcribe|whisper|dall-e|image|realtime|audio|live|moderation|sora|computer-use|babbage|davinci|curie|^ada$|:free)/;
const NAME = /^[a-z0-9][a-z0-9._-]*[a-z0-9]$/;

const perToken = (mtok) => Number((mtok / 1e6).toPrecision(12));

function names(match, out) {
  for (const [k, v] of Object.entries(match)) {
    if (k === 'or') v.forEach((m) => names(m, out));
    else if (k === 'equals') out.add(v);
    else if ((k === 'starts_with' || k === 'contains') && NAME.test(v) && !/-\d{4}$/.test(v)) out.add(v);
  }
}

function pricesOn(p) {
  if (!Array.isArray(p)) return p;
  let cur = null;
  for (const c of p) {
    if (!c.constraint) cur ??= c.prices;
    else if (c.constraint.type === 'start_date' && c.constraint.start_date <= date) cur = c.prices;
  }
  return cur ?? p[0].prices;
}

function entry(prices, litellm, id, url) {
  const e = { litellm_provider: litellm, mode: /embedding/.test(id) ? 'embedding' : 'chat' };
  const fields = { input_mtok: 'input_cost_per_token', output_mtok: 'output_cost_per_token', cache_read_mtok: 'cache_read_input_token_cost', cache_write_mtok: 'cache_creation_input_token_cost' };
  for (const [src, dst] of Object.entries(fields)) {
    const v = prices[src];
    if (v === undefined) continue;
    if (typeof v === 'number') { e[dst] = perToken(v); continue; }
    e[dst] = perToken(v.base);
    for (const t of v.tiers) e[`${dst}_above_${Math.round(t.start / 1000)}k_tokens`] = perToken(t.price);
  }
  if (e.input_cost_per_token === undefined) return null;
  if (e.mode === 'chat' && e.output_cost_per_token === undefined) return null;
  if (url) e.source = url;
  return e;
}

const out = {};
const put = (key, e) => { if (!(key in out)) out[key] = e; };
for (const [gid, [litellm, prefix]] of Object.entries(PROVIDERS)) {
  const p = findProvider({ providerId: gid });
  for (const m of p.models) {
    if (SKIP.test(m.id)) continue;
    if (gid === 'google' && !m.id.startsWith('gemini')) continue; // Vertex's Claude models
    const e = entry(pricesOn(m.prices), litellm, m.id, p.pricing_urls?.[0]);
    if (!e) continue;
    const ns = new Set([m.id]);
    names(m.match, ns);
    for (const n of ns) if (NAME.test(n.toLowerCase()) && !SKIP.test(n)) put(prefix + n.toLowerCase(), e);
  }
}
// Azure: genai-prices lists Azure's own prices and, for the rest, falls back
// to OpenAI's ("prices for *-Global models"); carry that fallback over as data.
for (const [k, e] of Object.entries(out)) {
  if (e.litellm_provider === 'openai') put('azure/' + k, { ...e, litellm_provider: 'azure', source: 'OpenAI price; genai-prices: Azure Global deployments fall back to OpenAI prices' });
}
const sorted = Object.fromEntries(Object.keys(out).sort().map((k) => [k, out[k]]));
process.stdout.write(JSON.stringify(sorted, null, 1) + '\n');

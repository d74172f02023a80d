#!/usr/bin/env node
// Golden tokenizer vectors held to Hugging Face's own code, not to ordo.
//
//   (cd "$TOKGEN" && npm install @anush008/tokenizers)      # TOKGEN: any scratch directory
//   NODE_PATH="$TOKGEN/node_modules" node tools/tokenizers/make_vectors.js [--sources DIR]
//
// tokenizer.json files: encoded and decoded by @anush008/tokenizers, the Node binding of Hugging
// Face's Rust `tokenizers` crate (the library behind every *TokenizerFast). The real files (BERT's
// tokenizer.json, T5's spiece.model, the opus-mt pair, and the Phi-3-mini, t5-small and
// whisper-tiny tokenizer files kept in microsoft/onnxruntime-extensions' test/data) are read from
// their committed copies in tests/data/tokenizers; `--sources DIR` first refreshes those copies from
// a directory laid out as <bert-base-uncased-tokenizer, t5-spiece, opus-mt-en-mg-tokenizer>/ plus
// ortx/ (a checkout of onnxruntime-extensions' test/data: phi-3-mini/, tokenizer/t5-small/,
// tokenizer/whisper.tiny/). The synthetic ones (one
// per model type and the rarer components) are written here, from data already in tests/data.
// T5 (the real spiece.model in tests/data/tokenizers/sources/t5-spiece, and the KJV fixture) is converted to
// tokenizer.json here the way transformers' T5Converter does, precompiled_charsmap included.
// Marian (opus-mt): transformers' MarianTokenizer is Python-only and not installable here, so its
// vectors follow MarianTokenizer's documented rules on top of SentencePiece's own tools
// (spm_encode / spm_decode / spm_export_vocab from Debian's `sentencepiece` package):
//   ids      = [">>xx<<" code at the start of the text, if any] + spm_encode(source.spm, rest)
//              pieces, each mapped through vocab.json (missing: <unk>'s id); special-token strings
//              (</s>, <unk>, <pad>) in the text are split out first and map to their own ids
//   ids_with_special = ids + [</s>]
//   decoded  = for the ids' pieces: runs of ordinary pieces through spm_decode(target.spm), a special
//              token appended followed by " ", U+2581 -> " ", then strip() (convert_tokens_to_string)
// Writes tests/data/tokenizers/<name>/ and tests/data/tokenizers/golden.json. Node and npm are only
// needed to regenerate; the tests read the committed files.
'use strict';
const fs = require('fs');
const path = require('path');
const cp = require('child_process');
const { Tokenizer } = require('@anush008/tokenizers');

const ROOT = path.resolve(__dirname, '..', '..');
const OUT = path.join(ROOT, 'tests', 'data', 'tokenizers');
let SOURCES = null;  // --sources DIR: refresh the committed copies of the real files from DIR
for (let i = 2; i < process.argv.length; ++i) if (process.argv[i] === '--sources') SOURCES = path.resolve(process.argv[++i]);
// Committed copy in tests/data/tokenizers ← file under --sources.
const REAL_FILES = {
  'bert-base-uncased/tokenizer.json': 'bert-base-uncased-tokenizer/tokenizer.json',
  'sources/t5-spiece/spiece.model': 't5-spiece/spiece.model',
  'sources/t5-spiece/tokenizer_config.json': 't5-spiece/tokenizer_config.json',
};
for (const f of ['source.spm', 'target.spm', 'vocab.json', 'tokenizer_config.json', 'config.json'])
  REAL_FILES['opus-mt-en-mg/' + f] = 'opus-mt-en-mg-tokenizer/' + f;
for (const [copy, src] of [['phi-3-mini', 'phi-3-mini'], ['t5-small', 'tokenizer/t5-small'], ['whisper-tiny', 'tokenizer/whisper.tiny']])
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) REAL_FILES[copy + '/' + f] = 'ortx/' + src + '/' + f;
function refreshRealFiles() {
  if (!SOURCES) return;
  for (const [copy, src] of Object.entries(REAL_FILES)) {
    fs.mkdirSync(path.dirname(path.join(OUT, copy)), { recursive: true });
    fs.copyFileSync(path.join(SOURCES, src), path.join(OUT, copy));
  }
}
const SP = '\u2581';

// ---- test strings ------------------------------------------------------------------------------
// {text} or {hex} (raw bytes, possibly invalid UTF-8: ordo replaces each maximal ill-formed
// subsequence with U+FFFD, which is what TextDecoder does, so the reference encodes that text).
const COMMON = [
  'Hello world', 'Hello, world! How are you today?', 'The quick brown fox jumps over the lazy dog.',
  '  leading spaces', 'trailing spaces   ', 'multiple    spaces\tand\ttabs', 'line one\nline two\r\nline three',
  '', ' ', '   ', 'Café résumé naïve façade', 'Crème brûlée à la française', 'Ångström Øre ß ẞ İstanbul',
  'ΑΒΓ αβγ ΣΊΣΥΦΟΣ', 'Привет, мир!', 'こんにちは世界', '你好，世界！中文测试', '한국어 텍스트', 'مرحبا بالعالم',
  'नमस्ते दुनिया', 'emoji 😀 and 👍🏽 skin tone', 'family 👨‍👩‍👧‍👦 zwj sequence', 'flags 🇫🇷🇯🇵 and ❤️ hearts',
  'numbers 12345 and 3.14159 and 1,000,000', 'phone +1 (555) 123-4567', '2024-01-15T12:30:00Z',
  '½ ² ³ ① Ⅻ fullwidth ＡＢＣ１２３', 'ﬁ ligature and ﬀ', 'e\u0301 combining vs é precomposed',
  "don't won't it's I'm you're we've they'll", 'URL https://example.com/path?q=1&r=2#frag',
  'email someone@example.org', 'code: def f(x): return x**2 + 1;', 'punctuation!!! ??? ... --- ***',
  'MiXeD CaSe WoRdS', 'a', 'supercalifragilisticexpialidocious', 'a'.repeat(120),
  'zero\u200bwidth space and soft\u00adhyphen', 'control\u0007chars\u0000null',
  'non-breaking\u00a0space and ideographic\u3000space', 'tab\t\tdouble and newline\n\n\ndouble',
  'Mixed 日本語 and English with 123 numbers', 'Once upon a time, there was a little girl named Lily.',
].map((text) => ({ text }));
const INVALID = ['6162c3ff20fe646566', '7472756e636174656420e282', 'c3282062616420636f6e74696e756174696f6e']
  .map((hex) => ({ hex }));

// ---- synthetic tokenizer.json files ------------------------------------------------------------
const read = (p) => fs.readFileSync(p, 'utf8');
const corpus = read(path.join(ROOT, 'tests/data/text/stories-sampled.txt'));

// Plain BPE training (most frequent adjacent pair first) over words given as symbol lists.
function trainMerges(words, nMerges, vocab) {
  const freq = new Map();
  for (const w of words) freq.set(w.join('\u0000'), (freq.get(w.join('\u0000')) || 0) + 1);
  let entries = [...freq].map(([k, n]) => [k.split('\u0000'), n]);
  const merges = [];
  for (let m = 0; m < nMerges; ++m) {
    const pairs = new Map();
    for (const [syms, n] of entries)
      for (let i = 0; i + 1 < syms.length; ++i) {
        const k = syms[i] + '\u0000' + syms[i + 1];
        pairs.set(k, (pairs.get(k) || 0) + n);
      }
    let best = null, bestN = 1;
    for (const [k, n] of pairs) if (n > bestN || (n === bestN && best !== null && k < best)) best = k, bestN = n;
    if (best === null) break;
    const [a, b] = best.split('\u0000');
    merges.push([a, b]);
    if (!(a + b in vocab)) vocab[a + b] = Object.keys(vocab).length;
    entries = entries.map(([syms, n]) => {
      const out = [];
      for (let i = 0; i < syms.length; ++i) {
        if (i + 1 < syms.length && syms[i] === a && syms[i + 1] === b) out.push(a + b), ++i;
        else out.push(syms[i]);
      }
      return [out, n];
    });
  }
  return merges;
}

function byteChars() {  // GPT-2 bytes_to_unicode
  const t = [];
  let n = 0;
  for (let b = 0; b < 256; ++b) {
    const direct = (b >= 33 && b <= 126) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    t.push(String.fromCodePoint(direct ? b : 256 + n++));
  }
  return t;
}

const added = (id, content, o = {}) => ({
  id, content, single_word: !!o.single_word, lstrip: !!o.lstrip, rstrip: !!o.rstrip,
  normalized: o.normalized === undefined ? !o.special : o.normalized, special: !!o.special,
});
const base = (o) => Object.assign({ version: '1.0', truncation: null, padding: null, added_tokens: [],
  normalizer: null, pre_tokenizer: null, post_processor: null, decoder: null }, o);

function bpeByteLevel() {  // RoBERTa-like: ByteLevel everything, ignore_merges, <mask> with lstrip
  const bc = byteChars();
  const vocab = { '<s>': 0, '<pad>': 1, '</s>': 2, '<unk>': 3 };
  for (const c of bc) vocab[c] = Object.keys(vocab).length;
  const re = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;
  const words = (corpus.match(re) || []).map((w) => [...Buffer.from(w, 'utf8')].map((b) => bc[b]));
  const merges = trainMerges(words, 400, vocab);
  const mask = Object.keys(vocab).length;
  return base({
    added_tokens: [added(0, '<s>', { special: true }), added(1, '<pad>', { special: true }),
      added(2, '</s>', { special: true }), added(3, '<unk>', { special: true }),
      added(mask, '<mask>', { special: true, lstrip: true }), added(mask + 1, '<|sep|>', { rstrip: true })],
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    post_processor: { type: 'RobertaProcessing', sep: ['</s>', 2], cls: ['<s>', 0], trim_offsets: true, add_prefix_space: true },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null,
      fuse_unk: false, byte_fallback: false, ignore_merges: true, vocab, merges },
  });
}

function bpeByteFallback() {  // Llama-like: Prepend + Replace normalizers, byte_fallback, fused unk
  const vocab = { '<unk>': 0, '<s>': 1, '</s>': 2 };
  for (let b = 0; b < 256; ++b) vocab['<0x' + b.toString(16).toUpperCase().padStart(2, '0') + '>'] = Object.keys(vocab).length;
  const text = SP + corpus.replace(/ /g, SP);
  for (const c of new Set([...text])) if (!(c in vocab) && c !== '\n') vocab[c] = Object.keys(vocab).length;
  const words = text.split(/(?=\u2581)|\n/).filter((w) => w).map((w) => [...w]);
  const merges = trainMerges(words, 400, vocab);
  return base({
    added_tokens: [added(0, '<unk>', { special: true }), added(1, '<s>', { special: true }), added(2, '</s>', { special: true })],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: SP },
      { type: 'Replace', pattern: { String: ' ' }, content: SP }] },
    post_processor: { type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '<s>', type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] } } },
    decoder: { type: 'Sequence', decoders: [{ type: 'Replace', pattern: { String: SP }, content: ' ' },
      { type: 'ByteFallback' }, { type: 'Fuse' }, { type: 'Strip', content: ' ', start: 1, stop: 0 }] },
    model: { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null, end_of_word_suffix: null,
      fuse_unk: true, byte_fallback: true, ignore_merges: false, vocab, merges },
  });
}

function bpeSuffix() {  // CLIP/OpenAI-GPT-like: NFC + Lowercase, Split regex, Digits, </w> suffix, BPEDecoder
  const vocab = { '<unk>': 0, '<|startoftext|>': 1, '<|endoftext|>': 2 };
  const words = [];
  for (const w of corpus.toLowerCase().match(/[\p{L}]+|\p{N}|[^\s\p{L}\p{N}]+/gu) || []) {
    const syms = [...w];
    syms[syms.length - 1] += '</w>';
    for (const s of syms) if (!(s in vocab)) vocab[s] = Object.keys(vocab).length;
    for (const s of [...w]) if (!(s in vocab)) vocab[s] = Object.keys(vocab).length;
    words.push(syms);
  }
  const merges = trainMerges(words, 300, vocab);
  return base({
    added_tokens: [added(0, '<unk>', { special: true }), added(1, '<|startoftext|>', { special: true }),
      added(2, '<|endoftext|>', { special: true })],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'NFC' },
      { type: 'Replace', pattern: { Regex: '\\s+' }, content: ' ' }, { type: 'Lowercase' }] },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [
      { type: 'Split', pattern: { Regex: "'s|'t|'re|'ve|'m|'ll|'d|[\\p{L}]+|[\\p{N}]|[^\\s\\p{L}\\p{N}]+" },
        behavior: 'Removed', invert: true },
      { type: 'Digits', individual_digits: true }] },
    post_processor: { type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<|startoftext|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '<|endoftext|>', type_id: 0 } }],
      pair: [{ Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { '<|startoftext|>': { id: '<|startoftext|>', ids: [1], tokens: ['<|startoftext|>'] },
        '<|endoftext|>': { id: '<|endoftext|>', ids: [2], tokens: ['<|endoftext|>'] } } },
    decoder: { type: 'BPEDecoder', suffix: '</w>' },
    model: { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null, end_of_word_suffix: '</w>',
      fuse_unk: false, byte_fallback: false, vocab, merges },
  });
}

function unigram() {  // T5-like: the KJV SentencePiece unigram pieces and scores, Metaspace both ways
  const out = cp.execFileSync('spm_export_vocab', ['--model=' + path.join(ROOT, 'tests/data/fixtures/tokenizers/t5/spiece.model')]);
  const vocab = out.toString('utf8').split('\n').filter((l) => l).map((l) => {
    const [p, s] = l.split('\t');
    return [p, Number(s)];
  });
  const n = vocab.length;
  return base({
    added_tokens: [added(0, '<pad>', { special: true }), added(1, '</s>', { special: true }), added(2, '<unk>', { special: true }),
      added(n, '<extra_id_0>', { special: true, lstrip: true, rstrip: true }),
      added(n + 1, 'Jerusalem', { single_word: true, normalized: true })],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'NFKC' }, { type: 'Strip', strip_left: false, strip_right: true },
      { type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' }] },
    pre_tokenizer: { type: 'Metaspace', replacement: SP, prepend_scheme: 'always', split: true },
    post_processor: { type: 'TemplateProcessing',
      single: [{ Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } }],
      pair: [{ Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } },
        { Sequence: { id: 'B', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } }],
      special_tokens: { '</s>': { id: '</s>', ids: [1], tokens: ['</s>'] } } },
    decoder: { type: 'Metaspace', replacement: SP, prepend_scheme: 'always', split: true },
    model: { type: 'Unigram', unk_id: 2, vocab, byte_fallback: false },
  });
}

function unigramFirst() {  // Metaspace prepend_scheme "first" without splitting, Digits grouped, Punctuation
  const t = unigram();
  t.added_tokens = t.added_tokens.slice(0, 3).concat([added(t.model.vocab.length, '<sep>', { special: true })]);
  t.normalizer = { type: 'Sequence', normalizers: [{ type: 'NFD' }, { type: 'StripAccents' }, { type: 'Lowercase' }] };
  t.pre_tokenizer = { type: 'Sequence', pretokenizers: [{ type: 'Punctuation', behavior: 'Isolated' },
    { type: 'Digits', individual_digits: false }, { type: 'Metaspace', replacement: SP, prepend_scheme: 'first', split: false }] };
  t.post_processor = null;
  t.decoder = { type: 'Sequence', decoders: [{ type: 'Metaspace', replacement: SP, prepend_scheme: 'first', split: false }] };
  return t;
}

function wordLevel() {  // WordLevel over the KJV BERT words: NFD + StripAccents + Lowercase, Whitespace
  const words = read(path.join(ROOT, 'tests/data/fixtures/tokenizers/bert/vocab.txt')).split('\n')
    .filter((w) => w && !w.startsWith('##'));
  const vocab = {};
  for (const w of words) if (!(w in vocab)) vocab[w] = Object.keys(vocab).length;
  return base({
    added_tokens: [added(vocab['[PAD]'], '[PAD]', { special: true }), added(vocab['[UNK]'], '[UNK]', { special: true }),
      added(vocab['[CLS]'], '[CLS]', { special: true }), added(vocab['[SEP]'], '[SEP]', { special: true }),
      added(Object.keys(vocab).length, 'hello world', { normalized: true })],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'NFD' }, { type: 'StripAccents' }, { type: 'Lowercase' }] },
    pre_tokenizer: { type: 'Whitespace' },
    post_processor: { type: 'BertProcessing', sep: ['[SEP]', vocab['[SEP]']], cls: ['[CLS]', vocab['[CLS]']] },
    decoder: null,
    model: { type: 'WordLevel', vocab, unk_token: '[UNK]' },
  });
}

function wordPiece() {  // WordPiece over the KJV BERT vocab: NFKC + Lowercase, WhitespaceSplit + Punctuation
  const toks = read(path.join(ROOT, 'tests/data/fixtures/tokenizers/bert/vocab.txt')).split('\n');
  if (toks[toks.length - 1] === '') toks.pop();
  const vocab = {};
  toks.forEach((t, i) => { if (!(t in vocab)) vocab[t] = i; });
  return base({
    added_tokens: ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'].map((t) => added(vocab[t], t, { special: true })),
    normalizer: { type: 'Sequence', normalizers: [{ type: 'NFKC' }, { type: 'Lowercase' }] },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'WhitespaceSplit' },
      { type: 'Punctuation', behavior: 'MergedWithPrevious' }, { type: 'Digits', individual_digits: true }] },
    post_processor: { type: 'Sequence', processors: [{ type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } }],
      pair: [{ Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { '[CLS]': { id: '[CLS]', ids: [vocab['[CLS]']], tokens: ['[CLS]'] },
        '[SEP]': { id: '[SEP]', ids: [vocab['[SEP]']], tokens: ['[SEP]'] } } }] },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: false },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 20, vocab },
  });
}

// ---- T5 tokenizer.json the way transformers' convert_slow_tokenizer.T5Converter writes it -------
// A SentencePiece ModelProto read field by field (no protobuf package needed): pieces (1) with
// piece (1), score (2, float), type (3); trainer_spec (2) with model_type (3), unk_id (40);
// normalizer_spec (3) with precompiled_charsmap (2).
function protoFields(buf) {
  const out = [];
  let i = 0;
  const varint = () => {
    let v = 0n, shift = 0n;
    for (;;) {
      const b = buf[i++];
      v |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const key = Number(varint()), field = key >>> 3, wire = key & 7;
    if (wire === 0) out.push({ field, value: varint() });
    else if (wire === 1) { out.push({ field, bytes: buf.subarray(i, i + 8) }); i += 8; }
    else if (wire === 2) { const n = Number(varint()); out.push({ field, bytes: buf.subarray(i, i + n) }); i += n; }
    else if (wire === 5) { out.push({ field, bytes: buf.subarray(i, i + 4) }); i += 4; }
    else throw new Error('unsupported protobuf wire type ' + wire);
  }
  return out;
}

function readSpm(file) {
  const m = { pieces: [], modelType: 1, unkId: 0, charsmap: Buffer.alloc(0) };
  for (const f of protoFields(fs.readFileSync(file))) {
    if (f.field === 1) {
      const p = { piece: '', score: 0, type: 1 };
      for (const g of protoFields(f.bytes)) {
        if (g.field === 1) p.piece = g.bytes.toString('utf8');
        else if (g.field === 2) p.score = g.bytes.readFloatLE(0);
        else if (g.field === 3) p.type = Number(g.value);
      }
      m.pieces.push(p);
    } else if (f.field === 2) {
      for (const g of protoFields(f.bytes)) {
        if (g.field === 3) m.modelType = Number(g.value);
        else if (g.field === 40) m.unkId = Number(g.value);
      }
    } else if (f.field === 3) {
      for (const g of protoFields(f.bytes)) if (g.field === 2) m.charsmap = Buffer.from(g.bytes);
    }
  }
  return m;
}

// T5Converter (SpmConverter with T5's vocab and post-processor), legacy=True, add_prefix_space=True.
// added: the tokens T5TokenizerFast adds ({id, content, special, normalized}); default: the control
// pieces, <unk> and the extra ids, all special and not normalized.
function t5Json(spmFile, extraIds, added) {
  const m = readSpm(spmFile);
  if (m.modelType !== 1) throw new Error(spmFile + ': not a unigram model');
  const vocab = m.pieces.map((p) => [p.piece, p.score]);
  for (let i = extraIds - 1; i >= 0; --i) vocab.push(['<extra_id_' + i + '>', 0.0]);
  if (!added) {
    added = m.pieces.map((p, id) => ({ id, content: p.piece, type: p.type })).filter((p) => p.type === 3 || p.type === 2)
      .map((p) => ({ id: p.id, content: p.content, special: true, normalized: false }));
    for (let i = m.pieces.length; i < vocab.length; ++i) added.push({ id: i, content: vocab[i][0], special: true, normalized: false });
  }
  const eos = vocab.findIndex(([p]) => p === '</s>');
  const meta = { type: 'Metaspace', replacement: SP, prepend_scheme: 'always', split: true };
  const normalizers = [{ type: 'Strip', strip_left: false, strip_right: true },
    { type: 'Replace', pattern: { Regex: ' {2,}' }, content: SP }];
  if (m.charsmap.length) normalizers.unshift({ type: 'Precompiled', precompiled_charsmap: m.charsmap.toString('base64') });
  return base({
    added_tokens: added.sort((a, b) => a.id - b.id).map((a) => added_(a.id, a.content, a)),
    normalizer: { type: 'Sequence', normalizers },
    pre_tokenizer: meta,
    post_processor: { type: 'TemplateProcessing',
      single: [{ Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } }],
      pair: [{ Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } },
        { Sequence: { id: 'B', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } }],
      special_tokens: { '</s>': { id: '</s>', ids: [eos], tokens: ['</s>'] } } },
    decoder: meta,
    model: { type: 'Unigram', unk_id: m.unkId, vocab, byte_fallback: false },
  });
}
const added_ = (id, content, o) => added(id, content, { special: o.special, normalized: o.normalized,
  lstrip: o.lstrip, rstrip: o.rstrip, single_word: o.single_word });

// The real T5 spiece.model, with the added tokens its tokenizer_config.json declares.
function t5Real() {
  const dir = path.join(OUT, 'sources', 't5-spiece');
  const cfg = JSON.parse(read(path.join(dir, 'tokenizer_config.json')));
  const addedTokens = Object.entries(cfg.added_tokens_decoder).map(([id, t]) => Object.assign({ id: Number(id) }, t));
  return t5Json(path.join(dir, 'spiece.model'), cfg.extra_ids, addedTokens);
}

// The KJV T5 fixture (tests/data/fixtures/tokenizers/t5), whose slow-tokenizer vectors are in
// tests/data/fixtures/tokenizers/golden.json; its strings are encoded here too.
function t5Kjv() { return t5Json(path.join(ROOT, 'tests/data/fixtures/tokenizers/t5/spiece.model'), 100); }
const fixtureT5 = () => JSON.parse(read(path.join(ROOT, 'tests/data/fixtures/tokenizers/golden.json')))
  .tokenizers.find((t) => t.name === 't5-kjv-legacy-true').cases.map((c) => c.text);

// ---- the tokenizers -----------------------------------------------------------------------------
const SYNTHETIC = [
  { name: 'bpe-bytelevel', build: bpeByteLevel, extra: ['Hello <mask> world', 'x<mask>y', 'a <|sep|>   b', '<s>Hi</s>'] },
  { name: 'bpe-byte-fallback', build: bpeByteFallback, extra: ['Hi <s> there</s>', '<unk>unknown', 'x  </s>  y'] },
  { name: 'bpe-suffix', build: bpeSuffix, extra: ['<|startoftext|>She said<|endoftext|>', 'x <unk> y'] },
  { name: 'unigram', build: unigram, extra: ['In the <extra_id_0> beginning', 'Jerusalem and xJerusalem, Jerusalem!', '</s> and <pad>'] },
  { name: 'unigram-first', build: unigramFirst, extra: ['<sep>after the separator', 'one<sep> two <sep>'] },
  { name: 'wordlevel', build: wordLevel, extra: ['[CLS] in the beginning [SEP]', 'say Hello World twice hello world', '[unk] [UNK]'] },
  { name: 't5-kjv', build: t5Kjv, extra: () => fixtureT5().concat(['x <extra_id_0> y', 'ﬁﬂ ligatures ﬃ']) },
  { name: 'wordpiece', build: wordPiece, extra: ['[CLS] the beginning [MASK] end [SEP]', 'beginnings and endings', '[SEP][SEP]'] },
];
// Strings for the Precompiled normalizer (sentencepiece nmt_nfkc rules, applied per grapheme).
const PRECOMPILED_EXTRA = ['ﬁﬂ ﬃ ﬄ ligatures', 'ＦＵＬＬ ｗｉｄｔｈ １２３ ！？', 'ｶﾞｷﾞ halfwidth katakana', '㍻ ㌔ ㎏ ℡ ™ №',
  'e\u0301\u0302 and a\u0308\u0304 stacked marks', 'A\u030a vs Å vs Å', '\u1100\u1161\u11a8 jamo', 'x\r\ny\rz\n',
  'soft\u00adhyphen zero\u200bwidth \ufeffbom', 'ⅰⅱⅲ ⑴ ⒜ ¼', 'tab\tand\u000bvertical\u000cfeed'];
// Carriage returns: alone, in CR LF, after code punctuation (Phi-3's merged ";\r" tokens).
const CR_EXTRA = ['a\rb', 'x;\r\ny;\r\n', 'int main() {\r\n  return 0;\r\n}\r\n', '\r\n\r\n', ' \r ', '});\r', '">\r\n'];
// Characters BERT's clean_text keeps or drops: 0, U+FFFD and tokenizers' is_other (Cc, Cf, Co from
// the unicode_categories crate's tables, no Cn) are dropped; noncharacters (U+FFFF, U+FFFE, U+FDD0),
// unassigned code points and characters made Cf after those tables stay.
const BERT_CLEAN_EXTRA = ['a\uFFFFb', 'x \uFFFE y \uFFFD z \u0000 w', '\uFFFF', 'end\uFFFF', 'q\uFDD0r \u{10FFFF} \u{1FFFE}',
  'u\u0378v unassigned', 'pound\u0890mark and alm\u061Cmark', 'private\uE000use \uF8FF \u{F0000}', 'new \u{1F970} emoji',
  'hyphen\u00ADsoft \u200Bzw \u2066iso\u2069', 'tags \u{E0041}\u{E007F} egyptian\u{13430}join'];
const REAL = [
  { name: 'bert-base-uncased', files: { 'tokenizer.json': 'bert-base-uncased/tokenizer.json' },
    extra: ['Hello [SEP] world', '[CLS] start [MASK] end [SEP]', '[sep] lowercase is not special', 'x[SEP]y', 'unaffable playing']
      .concat(BERT_CLEAN_EXTRA) },
  { name: 't5', build: t5Real, extra: PRECOMPILED_EXTRA.concat(['Translate to German: <extra_id_0> house <extra_id_99>',
    'x</s>y <pad> and <unk>', '<sql_context> SELECT * FROM t', 'a <sql_context>b']) },
  // Phi-3-mini: a Llama-style BPE whose merges hold tokens with a carriage return (";\r", "{\r"),
  // which a split on any whitespace breaks; the chat tokens rstrip, </s> is not special.
  { name: 'phi-3-mini', files: { 'tokenizer.json': 0, 'tokenizer_config.json': 0 },
    extra: CR_EXTRA.concat(['<|user|>\nHello<|end|>\n<|assistant|>\nHi there<|end|>', '<s>start</s> end  ',
      '<|system|> You are helpful.<|end|><|endoftext|>', '<|placeholder1|>x <|placeholder6|> y']) },
  // t5-small as first uploaded (tokenizers < 0.9): the model has no "type"; Precompiled alone.
  { name: 't5-small', files: { 'tokenizer.json': 0, 'tokenizer_config.json': 0 },
    extra: PRECOMPILED_EXTRA.concat(CR_EXTRA, ['translate English to German: The house is wonderful.',
      'summarize: studies have shown that owning a dog is good for you', '<extra_id_0> fills <extra_id_1>.',
      'cola sentence: The course is jumping well.', 'x</s>y <pad> and <unk>']) },
  // whisper-tiny: its template adds <|startoftranscript|><|notimestamps|> ... <|endoftext|>.
  { name: 'whisper-tiny', files: { 'tokenizer.json': 0, 'tokenizer_config.json': 0 },
    extra: CR_EXTRA.concat(['<|startoftranscript|><|en|><|transcribe|><|notimestamps|> Hello world.<|endoftext|>',
      '<|startoftranscript|><|fr|><|translate|><|0.00|> Bonjour<|2.50|>', ' And so my fellow Americans',
      '<|startofprev|> previous text<|startoftranscript|>', '<|nospeech|><|nocaptions|>', 'ça va? ¿qué tal?']) },
];

function caseText(c) {
  return c.hex !== undefined ? new TextDecoder('utf-8').decode(Buffer.from(c.hex, 'hex')) : c.text;
}

// The common strings, the invalid UTF-8 cases and a tokenizer's own extra strings, each text once.
function withExtra(extra) {
  const seen = new Set(COMMON.map((c) => c.text));
  return COMMON.concat(INVALID, extra.filter((t) => !seen.has(t) && seen.add(t)).map((text) => ({ text })));
}

async function hfVectors(tok, cases) {
  tok.disableTruncation();
  tok.disablePadding();
  const out = [];
  for (const c of cases) {
    const text = caseText(c);
    const plain = await tok.encode(text, null, { addSpecialTokens: false });
    const withSpecial = await tok.encode(text, null, { addSpecialTokens: true });
    const ids = plain.getIds(), idsWith = withSpecial.getIds();
    out.push(Object.assign({}, c, {
      ids, ids_with_special: idsWith, tokens: plain.getTokens(),
      decoded: await tok.decode(ids, false),
      decoded_with_special: await tok.decode(idsWith, false),
      decoded_skip_special: await tok.decode(idsWith, true),
    }));
  }
  return out;
}

// ---- Marian (MarianTokenizer's rules over SentencePiece's tools) -------------------------------
function spm(tool, model, input, extra = []) {
  return cp.execFileSync(tool, ['--model=' + model, ...extra], { input }).toString('utf8');
}

function marianDecode(dir, idList) {
  const vocab = JSON.parse(read(path.join(dir, 'vocab.json')));
  const decoder = new Map(Object.entries(vocab).map(([k, v]) => [v, k]));
  const specials = ['</s>', '<unk>', '<pad>'];
  let s = '', cur = [];
  const flush = () => {
    if (cur.length) s += spm('spm_decode', path.join(dir, 'target.spm'), cur.join(' ') + '\n', ['--input_format=piece']).replace(/\n$/, '');
    cur = [];
  };
  for (const id of idList) {
    const t = decoder.has(id) ? decoder.get(id) : '<unk>';
    if (specials.includes(t)) { flush(); s += t + ' '; } else cur.push(t);
  }
  flush();
  return s.split(SP).join(' ').trim();
}

function marianVectors(dir, cases) {
  const vocab = JSON.parse(read(path.join(dir, 'vocab.json')));
  const specials = ['</s>', '<unk>', '<pad>'];  // MarianTokenizer's eos, unk and pad
  const unk = vocab['<unk>'], eos = vocab['</s>'];
  const pieces = (text) => (text === '' ? [] : spm('spm_encode', path.join(dir, 'source.spm'), text + '\n',
    ['--output_format=piece']).replace(/\n$/, '').split(' ').filter((p) => p !== ''));
  const out = [];
  for (const c of cases) {
    const text = caseText(c);
    if (text.includes('\n') || text.includes('\r')) continue;  // spm_encode reads one sentence per line
    // PreTrainedTokenizer.tokenize: split special tokens out (no stripping), then _tokenize per chunk.
    const tokens = [];
    for (const chunk of text.split(/(<\/s>|<unk>|<pad>)/)) {
      if (chunk === '') continue;
      if (specials.includes(chunk)) { tokens.push(chunk); continue; }
      let rest = chunk;
      if (rest.startsWith('>>') && rest.indexOf('<<') !== -1) {  // remove_language_code
        const end = rest.indexOf('<<') + 2;
        tokens.push(rest.slice(0, end));
        rest = rest.slice(end);
      }
      tokens.push(...pieces(rest));
    }
    const ids = tokens.map((t) => (t in vocab ? vocab[t] : unk));
    const decode = (idList) => marianDecode(dir, idList);
    out.push(Object.assign({}, c, { ids, ids_with_special: ids.concat([eos]), tokens, decoded: decode(ids),
      decoded_with_special: decode(ids.concat([eos])) }));
  }
  return out;
}

// The tiny random-weight Marian fixture (vocabulary 256) with the opus-mt spm pair and a 256-entry
// vocab.json that maps this text's source pieces to exactly the fixture's greedy input ids, so
// `ordo run -p TEXT --no-special` must reproduce the fixture's greedy output, decoded by target.spm.
function marianTiny(realDir) {
  const fixture = JSON.parse(read(path.join(ROOT, 'tests/data/fixtures/marian/golden.json'))).cases[0].greedy;
  const text = 'The quick brown fox jumps over the lazy dog.';
  const pieces = spm('spm_encode', path.join(realDir, 'source.spm'), text + '\n', ['--output_format=piece']).trim().split(' ');
  if (pieces.length !== fixture.input_ids.length || new Set(pieces).size !== pieces.length)
    throw new Error('marian-tiny: the text must give ' + fixture.input_ids.length + ' distinct pieces');
  const vocab = { '</s>': 0, '<unk>': 1, '<pad>': 255 };
  pieces.forEach((p, i) => { vocab[p] = fixture.input_ids[i]; });
  const used = new Set(Object.values(vocab));
  const real = Object.keys(JSON.parse(read(path.join(realDir, 'vocab.json'))));
  let next = 0;
  for (const p of real) {
    if (p in vocab) continue;
    while (used.has(next)) ++next;
    if (next >= 256) break;
    vocab[p] = next;
    used.add(next);
  }
  fs.mkdirSync(path.join(OUT, 'marian-tiny'), { recursive: true });
  fs.writeFileSync(path.join(OUT, 'marian-tiny', 'vocab.json'), JSON.stringify(vocab));
  // Only vocab.json is kept (the tests pair it with opus-mt-en-mg's spm files); compute in a scratch dir.
  const dir = fs.mkdtempSync(path.join(require('os').tmpdir(), 'marian-tiny-'));
  fs.writeFileSync(path.join(dir, 'vocab.json'), JSON.stringify(vocab));
  fs.copyFileSync(path.join(realDir, 'source.spm'), path.join(dir, 'source.spm'));
  fs.copyFileSync(path.join(realDir, 'target.spm'), path.join(dir, 'target.spm'));
  const c = marianVectors(dir, [{ text }])[0];
  const result = { text, input_ids: c.ids, output_ids: fixture.output_ids, decoded_output: marianDecode(dir, fixture.output_ids) };
  fs.rmSync(dir, { recursive: true });
  return result;
}

// "model" objects, most without "type": which kind tokenizers reads each as (its ModelWrapper tries
// BPE, WordPiece, WordLevel, Unigram in turn), or that it refuses the file; and how merge strings
// split (at one space only; "#version" lines skipped; strings and [a, b] pairs not mixed).
const MODEL_KINDS = [
  { name: 'bpe', text: 'ab a', model: { vocab: { a: 0, b: 1, ab: 2, '[UNK]': 3 }, merges: ['a b'], unk_token: '[UNK]' } },
  { name: 'bpe-pairs', text: 'ab a', model: { vocab: { a: 0, b: 1, ab: 2 }, merges: [['a', 'b']] } },
  { name: 'bpe-version-line', text: 'ab a', model: { vocab: { a: 0, b: 1, ab: 2 }, merges: ['#version: 0.2', 'a b'] } },
  { name: 'bpe-merge-outside-vocab-is-wordlevel', text: 'ab a',
    model: { vocab: { a: 0, b: 1, '[UNK]': 2 }, merges: ['a b'], unk_token: '[UNK]' } },
  { name: 'wordpiece', text: 'ab a', model: { vocab: { a: 0, '##b': 1, '[UNK]': 2 }, unk_token: '[UNK]',
    continuing_subword_prefix: '##', max_input_chars_per_word: 100 } },
  { name: 'wordpiece-without-max-chars-is-wordlevel', text: 'ab a',
    model: { vocab: { a: 0, '##b': 1, '[UNK]': 2 }, unk_token: '[UNK]', continuing_subword_prefix: '##' } },
  { name: 'wordlevel', text: 'ab a', model: { vocab: { a: 0, '[UNK]': 1 }, unk_token: '[UNK]' } },
  { name: 'unigram', text: 'ab a', model: { unk_id: 0, vocab: [['<unk>', 0], ['a', -1], ['b', -2]] } },
  { name: 'unigram-without-unk', text: 'ab a', model: { vocab: [['<unk>', 0], ['a', -1], ['b', -2], ['ab', -2.5]] } },
  { name: 'no-kind-fits', model: { vocab: { a: 0 } } },
  { name: 'merge-with-two-spaces', model: { vocab: { a: 0, b: 1, ab: 2 }, merges: ['a  b'] } },
  { name: 'merge-with-two-spaces-typed', model: { type: 'BPE', vocab: { a: 0, b: 1, ab: 2 }, merges: ['a  b'] } },
  { name: 'merges-mixed-typed', model: { type: 'BPE', vocab: { a: 0, b: 1, ab: 2 }, merges: ['a b', ['a', 'b']] } },
  { name: 'merge-with-cr', text: ';\r;', whole: true, model: { vocab: { ';': 0, '\r': 1, ';\r': 2 }, merges: ['; \r'] } },
  { name: 'merge-with-tab-typed', text: 'a\tb', whole: true, model: { type: 'BPE', vocab: { a: 0, '\t': 1, b: 2, 'a\t': 3, 'a\tb': 4 },
    merges: ['a \t', 'a\t b'] } },
];

async function modelKinds() {
  const out = [];
  for (const c of MODEL_KINDS) {
    // whole: no pre-tokenizer, so the model sees the whitespace its merges hold.
    const json = JSON.stringify(base({ pre_tokenizer: c.whole ? null : { type: 'WhitespaceSplit' }, model: c.model }));
    const r = { name: c.name, tokenizer_json: json };
    try {
      const tok = Tokenizer.fromString(json);
      const file = path.join(require('os').tmpdir(), 'make_vectors_kind.json');
      tok.save(file);
      r.type = JSON.parse(read(file)).model.type;
      fs.rmSync(file);
      if (c.text !== undefined) {
        r.text = c.text;
        r.ids = (await tok.encode(c.text, null, { addSpecialTokens: false })).getIds();
      }
    } catch (e) {
      r.error = String(e);
    }
    out.push(r);
  }
  return out;
}

async function main() {
  refreshRealFiles();
  fs.mkdirSync(OUT, { recursive: true });
  const golden = { generator: 'tools/tokenizers/make_vectors.js',
    reference: '@anush008/tokenizers ' + require('@anush008/tokenizers/package.json').version +
      ' (Hugging Face tokenizers, Rust); Marian: MarianTokenizer rules over sentencepiece spm_encode/spm_decode',
    fields: 'ids = encode(text, add_special_tokens=False); ids_with_special = encode(text); tokens = encoding tokens ' +
      'without specials; decoded = decode(ids, skip_special_tokens=False); decoded_with_special = ' +
      'decode(ids_with_special, False); decoded_skip_special = decode(ids_with_special, True). A case with ' +
      '"hex" holds raw bytes (maybe invalid UTF-8), encoded as their lossy UTF-8 decoding.',
    tokenizers: [] };
  for (const s of SYNTHETIC) {
    const dir = path.join(OUT, s.name);
    fs.mkdirSync(dir, { recursive: true });
    const json = JSON.stringify(s.build());
    fs.writeFileSync(path.join(dir, 'tokenizer.json'), json);
    const cases = withExtra(typeof s.extra === 'function' ? s.extra() : s.extra);
    golden.tokenizers.push({ name: s.name, files: [s.name + '/tokenizer.json'], synthetic: true,
      cases: await hfVectors(Tokenizer.fromString(json), cases) });
  }
  for (const r of REAL) {
    const dir = path.join(OUT, r.name);
    fs.mkdirSync(dir, { recursive: true });
    if (r.build) fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(r.build()));
    const cases = withExtra(r.extra);
    golden.tokenizers.push({ name: r.name, files: Object.keys(r.files || { 'tokenizer.json': 0 }).map((f) => r.name + '/' + f),
      synthetic: false,
      cases: await hfVectors(Tokenizer.fromFile(path.join(dir, 'tokenizer.json')), cases) });
  }
  const marianDir = path.join(OUT, 'opus-mt-en-mg');
  const marianExtra = ['>>mlg<< Good morning', '>>fr<<no space after the code', 'The end.</s> and <unk> inside',
    'Jehovah is my shepherd', 'a >>fr<< in the middle stays text'].map((text) => ({ text }));
  golden.tokenizers.push({ name: 'opus-mt-en-mg', files: ['opus-mt-en-mg/source.spm', 'opus-mt-en-mg/target.spm',
    'opus-mt-en-mg/vocab.json'], synthetic: false, marian: true,
    cases: marianVectors(marianDir, COMMON.concat(INVALID, marianExtra)) });
  golden.marian_tiny = marianTiny(marianDir);
  golden.model_kinds = await modelKinds();
  fs.writeFileSync(path.join(OUT, 'golden.json'), JSON.stringify(golden, null, 1) + '\n');
  for (const t of golden.tokenizers) console.log(t.name + ': ' + t.cases.length + ' strings');
}

main().catch((e) => { console.error(e); process.exit(1); });

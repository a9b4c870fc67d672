/* ragloom serve: the web page.
 *
 * Plain JavaScript, no framework, no build step, nothing fetched but the API of the server that
 * served this page (see docs/server.md). Every string shown comes from STRINGS; every piece of
 * data is inserted with textContent / createElement, never as HTML.
 */
'use strict';

// ---------------------------------------------------------------------------------------------
// Strings
// ---------------------------------------------------------------------------------------------

const STRINGS = {
  en: {
    langToggle: '中文', langToggleLabel: 'Switch language to Chinese',
    tabsLabel: 'Sections', tabSearch: 'Search', tabAsk: 'Ask', tabLibrary: 'Library', tabChunks: 'Chunks',
    stats: '{documents} documents · {nodes} nodes · {model}', statsIngesting: ' · indexing…',
    authPrompt: 'This server needs an API key.', authRejected: 'The API key was not accepted. Enter it again.',
    authLabel: 'API key', authSave: 'Save',
    networkError: 'Network error: {msg}', loading: 'Loading…',
    labelQuery: 'Query', searchPlaceholder: 'Search the index…', labelMode: 'Mode',
    modeHybrid: 'hybrid', modeDense: 'dense', modeKeyword: 'keyword',
    labelType: 'File type', typeAll: 'all', labelPath: 'Path contains', searchButton: 'Search',
    searchMeta: '{n} results in {s} s · score: {score}', noResults: 'No results.',
    score: 'score', page: 'page {p}', showInDoc: 'Show in document',
    openInspector: 'Open in chunk inspector', close: 'Close',
    spanUnknown: 'The position of this chunk in the document is unknown.',
    labelQuestion: 'Question', askPlaceholder: 'Ask a question about the indexed documents…',
    labelResponseMode: 'Response mode', askButton: 'Ask', askHint: 'Ctrl+Enter to ask',
    rmCompact: 'compact', rmRefine: 'refine', rmTree: 'tree_summarize', rmSimple: 'simple_summarize',
    rmAccumulate: 'accumulate', rmNoText: 'no_text (sources only)',
    askThinking: 'Retrieving and answering…', askMeta: '{llm} · {mode} · {s} s',
    streamEnded: 'The answer stream ended before it was complete.', sourcesTitle: 'Sources',
    addTitle: 'Add documents', uploadLabel: 'Upload files', uploadButton: 'Upload and index',
    pathLabel: 'Path on the server (below an allowed root)', pathPlaceholder: '/path/to/docs',
    pathButton: 'Index path', noFiles: 'Choose one or more files first.', noPath: 'Enter a path first.',
    jobProgress: '{done}/{total} files, {embedded} embedded, {reused} reused',
    state_queued: 'queued', state_running: 'running', state_done: 'done', state_failed: 'failed',
    libraryFilter: 'Filter by path', filterButton: 'Filter', prev: 'Previous', next: 'Next',
    pageInfo: '{from}–{to} of {total}', noDocs: 'No documents.',
    colSource: 'Source', colType: 'Type', colNodes: 'Nodes', colIndexed: 'Indexed at', colId: 'ID',
    colActions: 'Actions', inspect: 'Inspect', reindex: 'Re-index', remove: 'Remove',
    confirmRemove: 'Remove {source} and its {n} nodes from the index?',
    docFilter: 'Filter documents', chooseDoc: 'Document', chooseDocPlaceholder: '— choose a document —',
    moreDocs: '… {n} more: type in the filter to narrow the list',
    chooseDocFirst: 'Choose a document first.',
    docInfo: '{source} · {format} · {n} chunks · chunk size {size} tokens ({tokenizer})',
    textFromChunks: 'The file changed or is gone: the text is rebuilt from the chunks (uncovered characters are spaces).',
    legendChunk: 'chunk (alternating colours)', legendOverlap: 'overlap (two chunks)', legendStart: 'chunk start',
    chunkTokens: '{t} / {size} tokens', overlapInfo: 'overlap ← {prev} · {next} →',
    compareTitle: 'Compare configurations', cfgParser: 'Parser', cfgSize: 'Chunk size', cfgOverlap: 'Overlap',
    cfgApply: 'Apply', applyHint: 'Choose a configuration and press Apply.', currentIndex: 'current index',
    summary: '{n} chunks, mean {mean} tokens, max {max} tokens', overBudget: ', {n} over budget',
    warn_english_only_model: 'The embed model reads English only: the meaning scores of a Chinese query are noise. Use hybrid (it searches such a query by its words) or keyword mode.',
    notWhole: '{label} must be a whole number.', atLeast: '{label} must be at least {min}.',
    between: '{label} must be between {min} and {max}.', lessThan: '{label} must be less than {other} ({n}).',
  },
  zh: {
    langToggle: 'English', langToggleLabel: '切换为英文界面',
    tabsLabel: '栏目', tabSearch: '检索', tabAsk: '问答', tabLibrary: '文档库', tabChunks: '分块',
    stats: '{documents} 个文档 · {nodes} 个节点 · {model}', statsIngesting: ' · 正在索引…',
    authPrompt: '此服务器需要 API 密钥。', authRejected: 'API 密钥未被接受，请重新输入。',
    authLabel: 'API 密钥', authSave: '保存',
    networkError: '网络错误：{msg}', loading: '加载中…',
    labelQuery: '查询', searchPlaceholder: '在索引中检索…', labelMode: '模式',
    modeHybrid: '混合', modeDense: '向量', modeKeyword: '关键词',
    labelType: '文件类型', typeAll: '全部', labelPath: '路径包含', searchButton: '检索',
    searchMeta: '{n} 条结果，用时 {s} 秒 · 分数：{score}', noResults: '没有结果。',
    score: '分数', page: '第 {p} 页', showInDoc: '在文档中显示',
    openInspector: '在分块检查器中打开', close: '关闭',
    spanUnknown: '此分块在文档中的位置未知。',
    labelQuestion: '问题', askPlaceholder: '就已索引的文档提问…',
    labelResponseMode: '响应模式', askButton: '提问', askHint: 'Ctrl+Enter 提问',
    rmCompact: 'compact（紧凑）', rmRefine: 'refine（逐步完善）', rmTree: 'tree_summarize（树状汇总）',
    rmSimple: 'simple_summarize（简单汇总）', rmAccumulate: 'accumulate（逐条累积）', rmNoText: 'no_text（仅来源）',
    askThinking: '正在检索并生成回答…', askMeta: '{llm} · {mode} · {s} 秒',
    streamEnded: '回答流在完成之前中断。', sourcesTitle: '来源',
    addTitle: '添加文档', uploadLabel: '上传文件', uploadButton: '上传并索引',
    pathLabel: '服务器上的路径（须位于允许的根目录下）', pathPlaceholder: '/path/to/docs',
    pathButton: '索引路径', noFiles: '请先选择一个或多个文件。', noPath: '请先输入路径。',
    jobProgress: '{done}/{total} 个文件，已嵌入 {embedded}，复用 {reused}',
    state_queued: '排队中', state_running: '运行中', state_done: '完成', state_failed: '失败',
    libraryFilter: '按路径筛选', filterButton: '筛选', prev: '上一页', next: '下一页',
    pageInfo: '第 {from}–{to} 条，共 {total} 条', noDocs: '没有文档。',
    colSource: '来源', colType: '类型', colNodes: '节点', colIndexed: '索引时间', colId: 'ID',
    colActions: '操作', inspect: '检查', reindex: '重新索引', remove: '删除',
    confirmRemove: '从索引中删除 {source} 及其 {n} 个节点？',
    docFilter: '筛选文档', chooseDoc: '文档', chooseDocPlaceholder: '— 选择文档 —',
    moreDocs: '… 另有 {n} 个：在筛选框输入以缩小范围',
    chooseDocFirst: '请先选择文档。',
    docInfo: '{source} · {format} · {n} 个分块 · 分块大小 {size} 词元（{tokenizer}）',
    textFromChunks: '文件已更改或已不存在：文本由分块重建（未覆盖的字符显示为空格）。',
    legendChunk: '分块（交替着色）', legendOverlap: '重叠（两个分块）', legendStart: '分块起点',
    chunkTokens: '{t} / {size} 词元', overlapInfo: '重叠 ← {prev} · {next} →',
    compareTitle: '比较配置', cfgParser: '解析器', cfgSize: '分块大小', cfgOverlap: '重叠',
    cfgApply: '应用', applyHint: '选择配置后点击“应用”。', currentIndex: '当前索引',
    summary: '{n} 个分块，平均 {mean} 词元，最多 {max} 词元', overBudget: '，{n} 个超出预算',
    warn_english_only_model: '嵌入模型只能理解英文：中文查询的向量分数没有意义。请使用混合模式（会按词检索此类查询）或关键词模式。',
    notWhole: '{label}必须是整数。', atLeast: '{label}不能小于 {min}。',
    between: '{label}必须在 {min} 到 {max} 之间。', lessThan: '{label}必须小于{other}（{n}）。',
  },
};

const KEY_STORAGE = 'ragloom_api_key';
const LANG_STORAGE = 'ragloom_lang';
const PAGE_SIZE = 50;       // rows of the Library table
const SELECT_SIZE = 200;    // documents offered by the inspector's select (narrowed by its filter)
const POLL_MS = 500;
const TABS = ['search', 'ask', 'library', 'chunks'];
// Chunk metadata left out of the chunk list: the same for every chunk of a document, or
// the header path again (header_path_list, else header_path, is shown first).
const HIDDEN_METADATA = new Set(['file_path', 'file_name', 'file_type', 'file_size', 'creation_date',
  'last_modified_date', 'last_accessed_date', 'document_title', 'encoding', 'header_path_display',
  'header_path']);

let lang = initialLanguage();

/** Everything the page has loaded, kept so that a language switch can render it again. */
const state = {
  stats: null,
  search: null,        // last POST /query response
  ask: null,           // last /ask result (the `done` event)
  asking: false,
  library: null,       // last GET /documents page
  libraryOffset: 0,
  job: null,           // last GET /jobs/{id}
  inspectedId: null,
  inspected: null,     // GET /documents/{id}/chunks of the inspected document
};

function storageGet(name) {
  try { return localStorage.getItem(name); } catch { return null; }
}

function storageSet(name, value) {
  try { localStorage.setItem(name, value); } catch { /* storage disabled: keep it for this page only */ }
}

function initialLanguage() {
  const saved = storageGet(LANG_STORAGE);
  if (saved === 'en' || saved === 'zh') return saved;
  return (navigator.language || 'en').toLowerCase().startsWith('zh') ? 'zh' : 'en';
}

/** The UI string `key` in the current language, with {name} placeholders filled from params. */
function t(key, params = {}) {
  const template = STRINGS[lang][key] ?? STRINGS.en[key] ?? key;
  return template.replace(/\{(\w+)\}/g, (all, name) => (name in params ? String(params[name]) : all));
}

// ---------------------------------------------------------------------------------------------
// DOM helpers
// ---------------------------------------------------------------------------------------------

const $ = (selector, root = document) => root.querySelector(selector);

/** createElement with attributes ("class", "text" or any attribute) and children (nodes or text). */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === 'class') node.className = value;
    else if (name === 'text') node.textContent = value;
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children) {
    if (child !== null && child !== undefined && child !== false) node.append(child);
  }
  return node;
}

function button(label, onClick, attrs = {}) {
  const node = el('button', { type: 'button', text: label, ...attrs });
  node.addEventListener('click', onClick);
  return node;
}

function showError(box, err) {
  box.textContent = typeof err === 'string' ? err : err.message;
  box.hidden = false;
}

function clearError(box) {
  box.textContent = '';
  box.hidden = true;
}

function setBusy(node, busy) {
  node.disabled = busy;
  node.setAttribute('aria-busy', String(busy));
}

/**
 * Scroll the scrolling element `box` so that `target` (inside it) sits a third of the way down
 * (with `onlyIfHidden`: only when it is out of sight), then bring `box` itself into the window.
 * Unlike target.scrollIntoView(), the rest of the page does not jump.
 */
function reveal(box, target, onlyIfHidden = false) {
  const b = box.getBoundingClientRect();
  const r = target.getBoundingClientRect();
  if (!onlyIfHidden || r.top < b.top || r.bottom > b.bottom) box.scrollTop += r.top - b.top - box.clientHeight / 3;
  if (r.left < b.left || r.left > b.left + box.clientWidth - 40) box.scrollLeft += r.left - b.left - 40;
  box.scrollIntoView({ block: 'nearest' });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The whole number in a number input, checked in the page's language against the input's own
 * min / max attributes (the server's limits) and `below` (an exclusive upper bound, with `belowName`
 * the field it comes from); null when the input is empty (the server's default). A bad value is
 * marked aria-invalid, focused, and thrown as an Error whose message names `label`.
 */
function checkedInt(input, label, below, belowName) {
  input.removeAttribute('aria-invalid');
  const raw = input.value.trim();
  // a number input's value is '' for text that is not a number at all
  if (raw === '' && !(input.validity && input.validity.badInput)) return null;
  const n = Number(raw);
  const min = input.min === '' ? null : Number(input.min);
  const max = input.max === '' ? null : Number(input.max);
  let message = null;
  if (raw === '' || !Number.isInteger(n)) message = t('notWhole', { label });
  else if ((min !== null && n < min) || (max !== null && n > max)) {
    message = max === null ? t('atLeast', { label, min }) : t('between', { label, min, max });
  } else if (below !== undefined && below !== null && n >= below) {
    message = t('lessThan', { label, other: belowName, n: below });
  }
  if (message === null) return n;
  input.setAttribute('aria-invalid', 'true');
  input.focus();
  throw new Error(message);
}

/** checkedInt with its error shown in `box`: the value (`fallback` for an empty input), or undefined. */
function formInt(input, label, box, fallback) {
  try {
    return checkedInt(input, label) ?? fallback;
  } catch (err) {
    showError(box, err);
    return undefined;
  }
}

/** A score to four significant digits: BM25 scores of a small index can be about 1e-6 (SQLite
 * FTS5 floors the weight of a word found in most chunks), which four decimals show as 0.0000. */
function scoreText(value) {
  return typeof value === 'number' ? value.toPrecision(4) : '–';
}

function fixed(value, digits) {
  return typeof value === 'number' ? value.toFixed(digits) : '–';
}

/**
 * The API's character offsets count code points (Python strings); JavaScript strings count UTF-16
 * units, one more for every character beyond U+FFFF (emoji). Returns a function mapping an API
 * offset into `text` to its JavaScript offset, clamped to the text; its `size` is the text's
 * length in code points.
 */
function unitOffsets(text) {
  let toUnit;
  if (!/[\uD800-\uDFFF]/.test(text)) {
    toUnit = (n) => Math.min(text.length, Math.max(0, n | 0));
    toUnit.size = text.length;
  } else {
    const units = [0];
    for (const ch of text) units.push(units[units.length - 1] + ch.length);
    toUnit = (n) => units[Math.min(units.length - 1, Math.max(0, n | 0))];
    toUnit.size = units.length - 1;
  }
  return toUnit;
}

function formatDate(iso) {
  const date = new Date(iso);
  if (!iso || Number.isNaN(date.getTime())) return iso || '';
  return date.toLocaleString(lang === 'zh' ? 'zh-CN' : 'en', { dateStyle: 'medium', timeStyle: 'short' });
}

// ---------------------------------------------------------------------------------------------
// API calls, with the API key and its prompt
// ---------------------------------------------------------------------------------------------

class ApiError extends Error {
  constructor(message, status) {
    super(message);
    this.status = status;
  }
}

let keyWaiter = null;   // one promise shared by all requests that got a 401 at the same time
let keyResolve = null;

/** Show the API key form and resolve once the user has saved a key. */
function waitForKey(rejected) {
  if (!keyWaiter) {
    keyWaiter = new Promise((resolve) => { keyResolve = resolve; });
    $('#auth-message').textContent = t(rejected ? 'authRejected' : 'authPrompt');
    $('#auth-form').hidden = false;
    $('#api-key-input').focus();
  }
  return keyWaiter;
}

function saveKey(event) {
  event.preventDefault();
  const key = $('#api-key-input').value.trim();
  if (!key) return;
  storageSet(KEY_STORAGE, key);
  $('#api-key-input').value = '';
  $('#auth-form').hidden = true;
  const resolve = keyResolve;
  keyWaiter = null;
  keyResolve = null;
  resolve();
}

/** The text of an error response: its JSON `error` (with `detail` when that is text), or the status. */
async function errorText(res) {
  let body = null;
  try { body = await res.json(); } catch { /* not JSON */ }
  const detail = body && typeof body.detail === 'string' ? body.detail : '';
  if (body && typeof body.error === 'string') return detail && detail !== body.error ? `${body.error}: ${detail}` : body.error;
  if (body && body.detail) return detail || JSON.stringify(body.detail).slice(0, 300);
  return `HTTP ${res.status} ${res.statusText}`;
}

/**
 * fetch() an API path (relative to the page), with the API key when one is saved. On 401 it asks
 * for the key and retries; any other non-2xx answer throws an ApiError with the server's message.
 */
async function api(path, { method = 'GET', json, form, accept = 'application/json' } = {}) {
  for (;;) {
    const key = storageGet(KEY_STORAGE);
    const headers = { Accept: accept };
    if (key) headers.Authorization = `Bearer ${key}`;
    let body;
    if (form) body = form;
    else if (json !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(json);
    }
    let res;
    try {
      res = await fetch(path, { method, headers, body });
    } catch (err) {
      throw new ApiError(t('networkError', { msg: err.message }), 0);
    }
    if (res.status === 401) {
      await waitForKey(Boolean(key));
      continue;
    }
    if (!res.ok) throw new ApiError(await errorText(res), res.status);
    return res;
  }
}

async function apiJson(path, options) {
  return (await api(path, options)).json();
}

const docPath = (id) => `documents/${encodeURIComponent(id)}`;

// A few recently shown GET /documents/{id}/chunks answers; documents can be large.
const docCache = new Map();

async function loadDocChunks(id) {
  if (docCache.has(id)) return docCache.get(id);
  const doc = await apiJson(`${docPath(id)}/chunks`);
  docCache.set(id, doc);
  if (docCache.size > 4) docCache.delete(docCache.keys().next().value);
  return doc;
}

// ---------------------------------------------------------------------------------------------
// Language, tabs, header
// ---------------------------------------------------------------------------------------------

function applyStaticStrings() {
  document.documentElement.lang = lang === 'zh' ? 'zh-CN' : 'en';
  // (data-i18n-n: the {n} of a counted string)
  for (const node of document.querySelectorAll('[data-i18n]')) {
    node.textContent = t(node.dataset.i18n, node.dataset.i18nN === undefined ? {} : { n: node.dataset.i18nN });
  }
  for (const node of document.querySelectorAll('[data-i18n-ph]')) node.placeholder = t(node.dataset.i18nPh);
  for (const node of document.querySelectorAll('[data-i18n-label]')) node.setAttribute('aria-label', t(node.dataset.i18nLabel));
  const toggle = $('#lang-toggle');
  toggle.textContent = t('langToggle');
  toggle.lang = lang === 'zh' ? 'en' : 'zh-CN';
  toggle.setAttribute('aria-label', t('langToggleLabel'));
}

function toggleLanguage() {
  lang = lang === 'zh' ? 'en' : 'zh';
  storageSet(LANG_STORAGE, lang);
  applyStaticStrings();
  // Render again what holds translated strings.
  renderStats();
  renderSearch();
  if (!state.asking) renderAsk();
  renderLibrary();
  renderJob();
  renderInspector();
  renderPanel(panels.a);
  renderPanel(panels.b);
}

function selectTab(name, focus = false) {
  for (const tab of TABS) {
    const on = tab === name;
    const tabButton = $(`#tab-${tab}`);
    tabButton.setAttribute('aria-selected', String(on));
    tabButton.tabIndex = on ? 0 : -1;
    $(`#panel-${tab}`).hidden = !on;
    if (on && focus) tabButton.focus();
  }
  history.replaceState(null, '', `#${name}`);
}

/** Arrow keys, Home and End move between tabs (Enter and Space click the focused one). */
function tabKeydown(event) {
  const index = TABS.indexOf(event.target.id.replace('tab-', ''));
  const moves = { ArrowRight: index + 1, ArrowLeft: index - 1, Home: 0, End: TABS.length - 1 };
  if (index < 0 || !(event.key in moves)) return;
  event.preventDefault();
  selectTab(TABS[(moves[event.key] + TABS.length) % TABS.length], true);
}

async function loadStats() {
  try {
    state.stats = await apiJson('stats');
    clearError($('#global-alert'));
  } catch (err) {
    showError($('#global-alert'), err);
    return;
  }
  renderStats();
  renderFileTypes();
}

function renderStats() {
  const s = state.stats;
  if (!s) return;
  $('#stats').textContent = t('stats', { documents: s.documents, nodes: s.nodes, model: s.embed_model })
    + (s.ingesting ? t('statsIngesting') : '');
}

/** The Search tab's file-type filter: "all" plus the index's MIME types, keeping the choice. */
function renderFileTypes() {
  const select = $('#search-type');
  const chosen = select.value;
  const types = Object.entries(state.stats.file_types || {});
  select.replaceChildren(el('option', { value: '', 'data-i18n': 'typeAll', text: t('typeAll') }),
    ...types.map(([mime, count]) => el('option', { value: mime, text: `${mime} (${count})` })));
  select.value = types.some(([mime]) => mime === chosen) ? chosen : '';
}

// ---------------------------------------------------------------------------------------------
// Document viewer (shared by Search and Ask): a document's text with one span in a <mark>
// ---------------------------------------------------------------------------------------------

let viewerHit = null;   // the result shown; a newer click makes older loads stale

function placeViewer(slot) {
  for (const other of document.querySelectorAll('.viewer-slot')) other.hidden = other !== slot;
  slot.append($('#doc-viewer'));
}

function closeViewer() {
  const viewer = $('#doc-viewer');
  viewer.hidden = true;
  viewer.parentElement.hidden = true;
  viewerHit = null;
}

/** Show `hit` (a query result or an answer source) highlighted in its document, inside `slot`. */
async function openViewer(hit, slot) {
  const viewer = $('#doc-viewer');
  placeViewer(slot);
  viewer.hidden = false;
  viewerHit = hit;
  $('#viewer-title').textContent = hit.source || hit.file_path || hit.ref_doc_id;
  $('#viewer-loc').textContent = [hit.page_label ? t('page', { p: hit.page_label }) : '', hit.location || '']
    .filter(Boolean).join(' · ');
  $('#viewer-note').hidden = true;
  clearError($('#viewer-error'));
  const pre = $('#viewer-text');
  pre.textContent = t('loading');
  let doc;
  try {
    doc = await loadDocChunks(hit.ref_doc_id);
  } catch (err) {
    if (viewerHit === hit) {
      pre.textContent = '';
      showError($('#viewer-error'), err);
    }
    return;
  }
  if (viewerHit !== hit) return;
  const text = doc.text || '';
  let start = hit.start_char_idx;
  let end = hit.end_char_idx;
  const toUnit = unitOffsets(text);
  if (!Number.isInteger(start) || !Number.isInteger(end) || start > end || end > toUnit.size) {
    // No usable offsets: look for the chunk's text instead.
    start = hit.text ? text.indexOf(hit.text) : -1;
    end = start + (hit.text || '').length;
  } else {
    start = toUnit(start);
    end = toUnit(end);
  }
  if (start < 0) {
    pre.textContent = text;
    $('#viewer-note').textContent = t('spanUnknown');
    $('#viewer-note').hidden = false;
    return;
  }
  const mark = el('mark', {}, text.slice(start, end));
  pre.replaceChildren(text.slice(0, start), mark, text.slice(end));
  reveal(pre, mark);
}

// ---------------------------------------------------------------------------------------------
// 1. Search
// ---------------------------------------------------------------------------------------------

function searchFilters() {
  const filters = [];
  const type = $('#search-type').value;
  const path = $('#search-path').value.trim();
  if (type) filters.push({ key: 'file_type', operator: '==', value: type });
  if (path) filters.push({ key: 'file_path', operator: 'text_match', value: path });
  return filters.length ? { filters, condition: 'and' } : null;
}

async function runSearch(event) {
  event.preventDefault();
  const text = $('#search-input').value.trim();
  if (!text) return;
  const submit = $('#search-button');
  clearError($('#search-error'));
  const k = formInt($('#search-k'), 'k', $('#search-error'), 5);
  if (k === undefined) return;
  setBusy(submit, true);
  try {
    state.search = await apiJson('query', {
      method: 'POST',
      json: { text, k, mode: $('#search-mode').value, filters: searchFilters() },
    });
    renderSearch();
  } catch (err) {
    showError($('#search-error'), err);
  } finally {
    setBusy(submit, false);
  }
}

function renderSearch() {
  const data = state.search;
  if (!data) return;
  const box = $('#search-results');
  const results = data.results || [];
  $('#search-meta').textContent = t('searchMeta', { n: results.length, s: fixed(data.seconds, 3), score: data.score || '' });
  // warnings about the results (a code the page knows is shown in its language)
  const warnings = (data.warnings || []).map((w) => (STRINGS.en[`warn_${w.code}`] ? t(`warn_${w.code}`) : w.message));
  $('#search-warning').textContent = warnings.join(' ');
  $('#search-warning').hidden = !warnings.length;
  box.replaceChildren(...results.map(resultCard));
  if (!results.length) box.append(el('p', { class: 'empty', text: t('noResults') }));
}

function resultCard(r) {
  return el('article', { class: 'result', 'data-node-id': r.node_id },
    el('header', { class: 'result-head' },
      el('span', { class: 'rank', text: `#${r.rank}` }),
      el('span', { class: 'score', title: t('score'), text: scoreText(r.score) }),
      el('span', { class: 'source', title: r.file_path || '', text: r.source || r.file_path || '' }),
      r.page_label ? el('span', { class: 'page', text: t('page', { p: r.page_label }) }) : null,
      el('span', { class: 'loc', text: r.location || '' }),
      el('span', { class: 'spacer' }),
      button(t('showInDoc'), () => openViewer(r, $('#search-viewer-slot')), { class: 'show-doc' })),
    el('p', { class: 'chunk', text: r.text || '' }));
}

// ---------------------------------------------------------------------------------------------
// 2. Ask: POST /ask with stream=true, read as Server-Sent Events
// ---------------------------------------------------------------------------------------------

/**
 * A Server-Sent Events parser: feed() it decoded text as it arrives (any of \n, \r\n, \r end a
 * line); it calls onEvent(name, data) for every complete event.
 */
function sseParser(onEvent) {
  let buffer = '';
  let name = 'message';
  let data = [];
  function line(text) {
    if (text === '') {
      if (data.length) onEvent(name, data.join('\n'));
      name = 'message';
      data = [];
    } else if (!text.startsWith(':')) {
      const colon = text.indexOf(':');
      const field = colon < 0 ? text : text.slice(0, colon);
      let value = colon < 0 ? '' : text.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') name = value;
      else if (field === 'data') data.push(value);
    }
  }
  return function feed(chunk, final = false) {
    buffer += chunk;
    const eol = /\r\n|\r|\n/g;
    let start = 0;
    let match;
    while ((match = eol.exec(buffer))) {
      // A lone \r at the end may be the first half of \r\n: wait for more.
      if (match[0] === '\r' && match.index === buffer.length - 1 && !final) break;
      line(buffer.slice(start, match.index));
      start = eol.lastIndex;
    }
    buffer = buffer.slice(start);
    if (final) {
      if (buffer) line(buffer);
      line('');
    }
  };
}

/** Read an /ask response, calling handlers.delta / done / error with each event's JSON data. */
async function readAskStream(res, handlers) {
  if (!(res.headers.get('Content-Type') || '').includes('text/event-stream')) {
    handlers.done(await res.json());   // a server that answered without streaming
    return;
  }
  const feed = sseParser((name, data) => {
    if (!handlers[name]) return;
    let payload;
    // Data that is not JSON is taken as the text itself (a delta's text or an error message).
    try { payload = JSON.parse(data); } catch { payload = { text: data, error: data }; }
    handlers[name](payload);
  });
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    feed(decoder.decode(value, { stream: true }));
  }
  feed(decoder.decode(), true);
}

async function runAsk(event) {
  event.preventDefault();
  const question = $('#ask-input').value.trim();
  if (!question || state.asking) return;
  const submit = $('#ask-button');
  const answer = $('#ask-answer');
  clearError($('#ask-error'));
  const k = formInt($('#ask-k'), 'k', $('#ask-error'), 5);
  if (k === undefined) return;
  state.ask = null;
  state.asking = true;
  setBusy(submit, true);
  answer.replaceChildren();
  answer.setAttribute('aria-busy', 'true');
  $('#ask-note').hidden = true;
  $('#ask-sources').replaceChildren();
  $('#ask-sources-title').hidden = true;
  $('#ask-meta').textContent = t('askThinking');
  const live = document.createTextNode('');
  answer.append(live);
  let finished = false;
  try {
    const res = await api('ask', {
      method: 'POST',
      accept: 'text/event-stream',
      json: { question, k, response_mode: $('#ask-response-mode').value, stream: true },
    });
    await readAskStream(res, {
      delta: (d) => live.appendData(d.text || ''),
      done: (result) => { finished = true; state.ask = result; },
      error: (e) => { finished = true; showError($('#ask-error'), e.error || t('streamEnded')); },
    });
    if (!finished) showError($('#ask-error'), t('streamEnded'));
  } catch (err) {
    showError($('#ask-error'), err);
  } finally {
    state.asking = false;
    setBusy(submit, false);
    answer.removeAttribute('aria-busy');
    if (state.ask) renderAsk();
    else $('#ask-meta').textContent = '';
  }
}

/** The finished answer with its [n] citations as links, the toy note, and the numbered sources. */
function renderAsk() {
  const r = state.ask;
  if (!r) return;
  const sources = r.sources || [];
  const text = r.answer || '';
  const answer = $('#ask-answer');
  answer.replaceChildren();
  const cite = /\[(\d+)\]/g;
  let last = 0;
  let match;
  while ((match = cite.exec(text))) {
    const n = Number(match[1]);
    if (n < 1 || n > sources.length) continue;
    answer.append(text.slice(last, match.index),
      el('a', { href: `#source-${n}`, class: 'cite', 'data-n': n, text: match[0] }));
    last = cite.lastIndex;
  }
  answer.append(text.slice(last));
  $('#ask-note').textContent = r.note || '';
  $('#ask-note').hidden = !(r.toy && r.note);
  $('#ask-meta').textContent = t('askMeta', { llm: r.llm || '', mode: r.response_mode || '', s: fixed(r.seconds, 2) });
  $('#ask-sources-title').hidden = !sources.length;
  $('#ask-sources').replaceChildren(...sources.map((s, i) => el('li', { id: `source-${i + 1}`, class: 'source-item' },
    button(`[${i + 1}] ${s.source || s.file_path || ''}`, () => openSource(i + 1), { class: 'source-link' }),
    el('span', { class: 'meta', text: ` ${s.page_label ? `${t('page', { p: s.page_label })} · ` : ''}${s.location || ''} · ${scoreText(s.score)}` }),
    el('p', { class: 'chunk', text: s.text || '' }))));
}

function openSource(n) {
  const source = (state.ask?.sources || [])[n - 1];
  if (!source) return;
  for (const item of document.querySelectorAll('#ask-sources .source-item')) {
    item.classList.toggle('active', item.id === `source-${n}`);
  }
  openViewer(source, $('#ask-viewer-slot'));
}

// ---------------------------------------------------------------------------------------------
// 3. Library: documents table, ingest and job progress
// ---------------------------------------------------------------------------------------------

async function loadLibrary(offset = state.libraryOffset) {
  const query = new URLSearchParams({ offset, limit: PAGE_SIZE, path: $('#library-filter').value.trim() });
  try {
    state.library = await apiJson(`documents?${query}`);
    state.libraryOffset = state.library.offset ?? offset;
    clearError($('#library-error'));
  } catch (err) {
    showError($('#library-error'), err);
    return;
  }
  renderLibrary();
}

function renderLibrary() {
  const data = state.library;
  if (!data) return;
  const docs = data.documents || [];
  const body = $('#doc-table tbody');
  body.replaceChildren(...docs.map((d) => el('tr', { 'data-id': d.id },
    el('td', { class: 'source', title: d.file_path || '', text: d.source || d.file_path || '' }),
    el('td', { text: d.file_type || '' }),
    el('td', { class: 'num', text: d.nodes ?? '' }),
    el('td', { class: 'date', title: d.indexed_at || '', text: formatDate(d.indexed_at) }),
    el('td', {}, el('code', { class: 'doc-id', title: d.id, text: d.id })),
    el('td', { class: 'actions' },
      button(t('inspect'), () => openInspector(d.id, d.source), { class: 'inspect' }),
      button(t('reindex'), () => startIngest({ json: { paths: [d.file_path], full: true } }), { class: 'reindex' }),
      button(t('remove'), () => removeDocument(d), { class: 'remove danger' })))));
  if (!docs.length) body.append(el('tr', {}, el('td', { colspan: 6, class: 'empty', text: t('noDocs') })));
  const offset = data.offset ?? 0;
  const total = data.total ?? docs.length;
  $('#page-info').textContent = t('pageInfo', { from: docs.length ? offset + 1 : 0, to: offset + docs.length, total });
  $('#page-prev').disabled = offset <= 0;
  $('#page-next').disabled = offset + docs.length >= total;
}

async function removeDocument(doc) {
  if (!confirm(t('confirmRemove', { source: doc.source || doc.id, n: doc.nodes ?? '?' }))) return;
  try {
    await apiJson(docPath(doc.id), { method: 'DELETE' });
  } catch (err) {
    showError($('#library-error'), err);
    return;
  }
  docCache.delete(doc.id);
  // Removing the last row of a page shows the page before it.
  const lastOnPage = (state.library?.documents || []).length === 1 && state.libraryOffset > 0;
  loadLibrary(lastOnPage ? Math.max(0, state.libraryOffset - PAGE_SIZE) : state.libraryOffset);
  loadStats();
  loadInspectorDocs();
}

/**
 * POST /ingest (JSON paths or multipart uploads), then follow the job it started; the Add area,
 * where its progress or error shows, is scrolled into sight (Re-index is clicked further down).
 */
async function startIngest(options) {
  clearError($('#ingest-error'));
  try {
    const job = await apiJson('ingest', { method: 'POST', ...options });
    trackJob(job.job_id, job.state || 'queued');
  } catch (err) {
    showError($('#ingest-error'), err);
  }
  $('#panel-library .add').scrollIntoView({ block: 'nearest' });
}

function uploadFiles() {
  const input = $('#upload-input');
  if (!input.files.length) {
    showError($('#ingest-error'), t('noFiles'));
    return;
  }
  const form = new FormData();
  for (const file of input.files) form.append('files', file, file.name);
  input.value = '';
  startIngest({ form });
}

function ingestPath(event) {
  event.preventDefault();
  const path = $('#path-input').value.trim();
  if (!path) {
    showError($('#ingest-error'), t('noPath'));
    return;
  }
  startIngest({ json: { paths: [path] } });
}

let jobToken = 0;   // only the newest job is followed

async function trackJob(id, initialState) {
  const token = ++jobToken;
  state.job = { id, state: initialState, progress: null, errors: [] };
  renderJob();
  for (;;) {
    try {
      const job = await apiJson(`jobs/${encodeURIComponent(id)}`);
      if (token !== jobToken) return;
      state.job = job;
    } catch (err) {
      if (token === jobToken) showError($('#ingest-error'), err);
      return;
    }
    renderJob();
    if (state.job.state === 'done' || state.job.state === 'failed') break;
    await sleep(POLL_MS);
  }
  docCache.clear();
  loadStats();
  loadLibrary();
  loadInspectorDocs();
}

function renderJob() {
  const job = state.job;
  if (!job) return;
  const p = job.progress || {};
  const done = job.state === 'done';
  const fraction = done ? 1 : Math.min(1, Math.max(0, p.fraction || 0));
  $('#ingest-box').hidden = false;
  const bar = $('#ingest-progress');
  bar.value = fraction;
  bar.textContent = `${Math.round(fraction * 100)}%`;
  const status = $('#ingest-status');
  status.dataset.state = job.state;
  let text = `${t('jobProgress', { done: p.files_done ?? 0, total: p.files_total ?? 0,
    embedded: p.nodes_embedded ?? 0, reused: p.nodes_reused ?? 0 })} — ${t(`state_${job.state}`)}`;
  if (done) text += ' (100%)';
  else if (job.state === 'running') text += ` (${Math.round(fraction * 100)}%)`;
  if (job.state === 'failed' && job.error) text += `: ${job.error}`;
  status.textContent = text;
  $('#ingest-errors').replaceChildren(...(job.errors || []).map((e) =>
    el('li', {}, el('code', { text: e.path || '' }), `: ${e.reason || ''}`)));
}

// ---------------------------------------------------------------------------------------------
// 4. Chunks: a document's text with its chunk boundaries drawn over it
// ---------------------------------------------------------------------------------------------

/**
 * Renders one GET /documents/{id}/chunks (or /chunks/preview) answer into a root element that
 * holds .gutter, .chunk-text and .chunk-items, and handles selecting a chunk.
 */
class ChunkView {
  constructor(root) {
    this.gutter = $('.gutter', root);
    this.text = $('.chunk-text', root);
    this.list = $('.chunk-items', root);
    this.clear();
    this.list.addEventListener('click', (event) => {
      const item = event.target.closest('.chunk-item');
      if (item) this.select(Number(item.dataset.index), 'text');
    });
    this.list.addEventListener('keydown', (event) => {
      if ((event.key === 'Enter' || event.key === ' ') && event.target.classList.contains('chunk-item')) {
        event.preventDefault();
        this.select(Number(event.target.dataset.index), 'text');
      }
    });
    this.text.addEventListener('click', (event) => {
      const seg = event.target.closest('.seg');
      if (seg && seg.dataset.chunks) this.select(Number(seg.dataset.chunks.split(',')[0]), 'list');
    });
  }

  clear() {
    this.segsByChunk = [];   // chunk index → its segment elements
    this.markers = [];       // chunk index → its start marker
    this.items = [];         // chunk index → its list item
    this.selected = null;
    this.text.replaceChildren();
    this.text.classList.remove('code');
    this.gutter.hidden = true;
    this.list.replaceChildren();
  }

  render(data) {
    this.clear();
    const text = data.text || '';
    const chunks = data.chunks || [];
    const size = data.budget?.chunk_size;
    const clamp = unitOffsets(text);   // API offsets (code points) → UTF-16 offsets, clamped
    // Cut the text at every chunk boundary; each piece is then covered by a fixed set of chunks.
    const cuts = new Set([0, text.length]);
    for (const c of chunks) { cuts.add(clamp(c.start)); cuts.add(clamp(c.end)); }
    const points = [...cuts].sort((a, b) => a - b);
    const byStart = chunks.map((c, i) => i).sort((a, b) => clamp(chunks[a].start) - clamp(chunks[b].start));
    this.segsByChunk = chunks.map(() => []);
    const fragment = document.createDocumentFragment();
    let next = 0;
    let active = [];   // chunks covering the current piece
    for (let p = 0; p < points.length - 1; p += 1) {
      const from = points[p];
      const to = points[p + 1];
      active = active.filter((i) => clamp(chunks[i].end) > from);
      while (next < byStart.length && clamp(chunks[byStart[next]].start) <= from) {
        const i = byStart[next++];
        this.markers[i] = el('span', { class: 'bmark', 'data-n': i, 'aria-hidden': 'true' });
        fragment.append(this.markers[i]);
        if (clamp(chunks[i].end) > from) active.push(i);
      }
      active.sort((a, b) => a - b);
      let cls = 'seg gap';
      if (active.length === 1) cls = `seg c${active[0] % 2}`;
      else if (active.length > 1) cls = 'seg overlap';
      const seg = el('span', { class: cls, 'data-chunks': active.join(',') }, text.slice(from, to));
      for (const i of active) this.segsByChunk[i].push(seg);
      fragment.append(seg);
    }
    for (const i of byStart.slice(next)) {   // empty chunks at the very end of the text
      this.markers[i] = el('span', { class: 'bmark', 'data-n': i, 'aria-hidden': 'true' });
      fragment.append(this.markers[i]);
    }
    this.text.append(fragment);
    if (data.format === 'code') {
      this.text.classList.add('code');
      const lines = text.split('\n').length;
      this.gutter.textContent = Array.from({ length: lines }, (_, i) => i + 1).join('\n');
      this.gutter.hidden = false;
    }
    this.items = chunks.map((c, i) => chunkItem(c, i, size));
    this.list.replaceChildren(...this.items);
  }

  /**
   * Highlight chunk i in the text and the list; scroll `scrollTo` ('text' or 'list') to it, and
   * the list also when the item is out of sight.
   */
  select(i, scrollTo) {
    if (!this.items[i]) return;
    if (this.selected !== null) {
      for (const seg of this.segsByChunk[this.selected]) seg.classList.remove('active');
      this.items[this.selected].classList.remove('active');
      this.items[this.selected].removeAttribute('aria-current');
    }
    this.selected = i;
    for (const seg of this.segsByChunk[i]) seg.classList.add('active');
    this.items[i].classList.add('active');
    this.items[i].setAttribute('aria-current', 'true');
    if (scrollTo === 'text') reveal(this.text.parentElement, this.markers[i]);
    reveal(this.list, this.items[i], scrollTo !== 'list');
  }
}

/** One entry of the chunk list; `tokens` and the budget may be null (no tokenizer). */
function chunkItem(c, i, size) {
  const hasTokens = typeof c.tokens === 'number';
  const over = Boolean(size && hasTokens && c.tokens > size);
  const fill = el('span', { class: 'tok-fill' });
  fill.style.width = `${size && hasTokens ? Math.min(100, (100 * c.tokens) / size) : 0}%`;
  return el('li', {
    class: `chunk-item${over ? ' over' : ''}`, tabindex: 0,
    'data-index': i, 'data-start': c.start, 'data-end': c.end, 'data-tokens': c.tokens,
  },
  el('div', { class: 'chunk-head' },
    el('strong', { class: 'chunk-no', text: `#${i}` }),
    el('span', { class: 'range', text: `${c.start}–${c.end}` }),
    el('span', { class: 'tok-text', text: t('chunkTokens', { t: c.tokens ?? '?', size: size ?? '?' }) })),
  el('span', { class: 'tok-bar', 'aria-hidden': 'true' }, fill),
  el('div', { class: 'overlaps', text: t('overlapInfo', { prev: c.overlap_prev ?? 0, next: c.overlap_next ?? 0 }) }),
  chunkMetadata(c.metadata));
}

/** The header path first (markdown: header_path_list, the titles down to the section's own;
 * an index written before it existed has that list under header_path), then other metadata as key=value. */
function chunkMetadata(meta) {
  if (!meta) return null;
  const path = meta.header_path_list ?? meta.header_path;
  const header = Array.isArray(path) ? path.join(' › ') : path;
  const rest = Object.entries(meta)
    .filter(([key]) => key !== 'header_path_list' && !HIDDEN_METADATA.has(key))
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
  if (!header && !rest.length) return null;
  return el('div', { class: 'chunk-meta' },
    header ? el('span', { class: 'header-path', text: header }) : null,
    rest.length ? el('span', { class: 'meta-rest', text: rest.join(' · ') }) : null);
}

function chunkSummary(data) {
  const chunks = data.chunks || [];
  const tokens = chunks.map((c) => c.tokens).filter((n) => typeof n === 'number');
  const size = data.budget?.chunk_size;
  const over = size ? tokens.filter((n) => n > size).length : 0;
  const mean = tokens.length ? tokens.reduce((a, b) => a + b, 0) / tokens.length : 0;
  return t('summary', { n: chunks.length, mean: tokens.length ? mean.toFixed(1) : '?', max: tokens.length ? Math.max(...tokens) : '?' })
    + (over ? t('overBudget', { n: over }) : '');
}

const mainView = new ChunkView($('#inspector'));

/** A compare panel: its configuration inputs and its own ChunkView. */
function makePanel(root) {
  const panel = {
    view: new ChunkView(root),
    parser: $('.cfg-parser', root),
    size: $('.cfg-size', root),
    overlap: $('.cfg-overlap', root),
    apply: $('.cfg-apply', root),
    summary: $('.cfg-summary', root),
    error: $('.cfg-error', root),
    data: null,
    current: false,   // true when data is the index's own chunks
  };
  $('.cfg-form', root).addEventListener('submit', (event) => {
    event.preventDefault();
    applyPanel(panel);
  });
  return panel;
}

const panels = { a: makePanel($('#compare-a')), b: makePanel($('#compare-b')) };

function setPanelConfig(panel, parser, size, overlap) {
  if (parser && ![...panel.parser.options].some((o) => o.value === parser)) {
    panel.parser.append(el('option', { value: parser, text: parser }));
  }
  if (parser) panel.parser.value = parser;
  if (size !== undefined && size !== null) panel.size.value = size;
  if (overlap !== undefined && overlap !== null) panel.overlap.value = overlap;
}

/** Fill both compare panels' parser selects and inputs from GET /parsers. */
async function loadParsers() {
  let data;
  try {
    data = await apiJson('parsers');
  } catch (err) {
    showError($('#inspector-error'), err);
    return;
  }
  const d = data.default || {};
  for (const panel of Object.values(panels)) {
    panel.parser.replaceChildren(...(data.parsers || []).map((p) =>
      el('option', { value: p.name, title: p.description || '', text: p.name })));
    setPanelConfig(panel, d.parser, d.chunk_size, d.chunk_overlap);
  }
}

function renderPanel(panel) {
  if (!panel.data) {
    panel.view.clear();
    panel.summary.textContent = t('applyHint');
    return;
  }
  panel.view.render(panel.data);
  panel.summary.textContent = (panel.current ? `${t('currentIndex')}: ` : '') + chunkSummary(panel.data);
}

async function applyPanel(panel) {
  clearError(panel.error);
  const id = state.inspectedId;
  if (!id) {
    showError(panel.error, t('chooseDocFirst'));
    return;
  }
  let size;
  let overlap;
  try {
    size = checkedInt(panel.size, t('cfgSize'));
    overlap = checkedInt(panel.overlap, t('cfgOverlap'), size, t('cfgSize'));
  } catch (err) {
    showError(panel.error, err);
    return;
  }
  setBusy(panel.apply, true);
  try {
    const data = await apiJson('chunks/preview', {
      method: 'POST',
      json: { doc_id: id, parser: panel.parser.value, chunk_size: size, chunk_overlap: overlap },
    });
    if (id !== state.inspectedId) return;
    panel.data = data;
    panel.current = false;
    renderPanel(panel);
  } catch (err) {
    showError(panel.error, err);
  } finally {
    setBusy(panel.apply, false);
  }
}

/** Make sure the document select has an option for `id` (it lists one page of documents). */
function ensureDocOption(id, label) {
  const select = $('#inspector-doc');
  if (![...select.options].some((o) => o.value === id)) {
    // above the "… N more" line, when the list has one
    select.insertBefore(el('option', { value: id, text: label || id }), $('[data-testid=inspector-more]'));
  }
  select.value = id;
}

async function loadInspectorDocs() {
  const query = new URLSearchParams({ offset: 0, limit: SELECT_SIZE, path: $('#inspector-filter').value.trim() });
  let data;
  try {
    data = await apiJson(`documents?${query}`);
  } catch (err) {
    showError($('#inspector-error'), err);
    return;
  }
  const docs = data.documents || [];
  const more = (data.total || 0) - docs.length;  // the select lists one page: say how many it leaves out
  $('#inspector-doc').replaceChildren(
    el('option', { value: '', 'data-i18n': 'chooseDocPlaceholder', text: t('chooseDocPlaceholder') }),
    ...docs.map((d) => el('option', { value: d.id, text: d.source || d.file_path || d.id })),
    ...(more > 0 ? [el('option', { value: '', disabled: '', 'data-testid': 'inspector-more', 'data-i18n': 'moreDocs',
                                   'data-i18n-n': more, text: t('moreDocs', { n: more }) })] : []));
  if (state.inspectedId) ensureDocOption(state.inspectedId, state.inspected?.source);
}

/** Show a document in the inspector (and as panel A); optionally select the chunk starting at focusStart. */
async function openInspector(id, label, focusStart = null) {
  selectTab('chunks');
  if (!id) return;
  ensureDocOption(id, label);
  state.inspectedId = id;
  state.inspected = null;
  clearError($('#inspector-error'));
  mainView.clear();
  $('#inspector-info').textContent = t('loading');
  let doc;
  try {
    doc = await loadDocChunks(id);
  } catch (err) {
    if (state.inspectedId === id) {
      $('#inspector-info').textContent = '';
      showError($('#inspector-error'), err);
    }
    return;
  }
  if (state.inspectedId !== id) return;
  state.inspected = doc;
  renderInspector();
  // Panel A starts as the index's own chunks, with the index's configuration; B waits for Apply.
  const s = state.stats || {};
  setPanelConfig(panels.a, doc.parser || s.parser, doc.budget?.chunk_size ?? s.chunk_size, s.chunk_overlap);
  Object.assign(panels.a, { data: doc, current: true });
  Object.assign(panels.b, { data: null, current: false });
  for (const panel of Object.values(panels)) {
    clearError(panel.error);
    renderPanel(panel);
  }
  if (focusStart !== null) {
    const index = (doc.chunks || []).findIndex((c) => c.start === focusStart);
    if (index >= 0) mainView.select(index, 'text');
  }
}

function renderInspector() {
  const doc = state.inspected;
  if (!doc) return;
  $('#inspector-info').textContent = t('docInfo', {
    source: doc.source || doc.file_path || doc.id, format: doc.format || 'text', n: (doc.chunks || []).length,
    size: doc.budget?.chunk_size ?? '?', tokenizer: doc.budget?.tokenizer || '?',
  });
  $('#inspector-warn').textContent = t('textFromChunks');
  $('#inspector-warn').hidden = doc.text_source !== 'chunks';
  mainView.render(doc);
}

// ---------------------------------------------------------------------------------------------
// Start
// ---------------------------------------------------------------------------------------------

function debounce(fn, ms) {
  let timer = null;
  return () => {
    clearTimeout(timer);
    timer = setTimeout(fn, ms);
  };
}

function init() {
  applyStaticStrings();
  $('#lang-toggle').addEventListener('click', toggleLanguage);
  $('#auth-form').addEventListener('submit', saveKey);
  for (const tab of TABS) $(`#tab-${tab}`).addEventListener('click', () => selectTab(tab));
  $('.tabs').addEventListener('keydown', tabKeydown);

  $('#search-form').addEventListener('submit', runSearch);
  $('#viewer-close').addEventListener('click', closeViewer);
  $('#viewer-inspect').addEventListener('click', () => {
    if (viewerHit) openInspector(viewerHit.ref_doc_id, viewerHit.source, viewerHit.start_char_idx ?? null);
  });

  $('#ask-form').addEventListener('submit', runAsk);
  $('#ask-input').addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) $('#ask-form').requestSubmit();
  });
  $('#ask-answer').addEventListener('click', (event) => {
    const link = event.target.closest('a.cite');
    if (!link) return;
    event.preventDefault();
    openSource(Number(link.dataset.n));
  });

  $('#upload-button').addEventListener('click', uploadFiles);
  $('#path-form').addEventListener('submit', ingestPath);
  $('#library-filter-form').addEventListener('submit', (event) => {
    event.preventDefault();
    loadLibrary(0);
  });
  $('#page-prev').addEventListener('click', () => loadLibrary(Math.max(0, state.libraryOffset - PAGE_SIZE)));
  $('#page-next').addEventListener('click', () => loadLibrary(state.libraryOffset + PAGE_SIZE));

  $('#inspector-doc').addEventListener('change', (event) => {
    const select = event.target;
    openInspector(select.value, select.selectedOptions[0]?.textContent);
  });
  $('#inspector-filter').addEventListener('input', debounce(loadInspectorDocs, 300));

  const fromHash = location.hash.slice(1);
  selectTab(TABS.includes(fromHash) ? fromHash : 'search');
  for (const panel of Object.values(panels)) renderPanel(panel);
  loadStats();
  loadParsers();
  loadLibrary(0);
  loadInspectorDocs();
}

init();

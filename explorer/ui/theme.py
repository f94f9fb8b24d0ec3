"""The page's look: WCAG AA contrast, tables that stay readable, presentation mode for a projector, and the small
scripts the page runs. Declared once; `explorer/ui/app.py` hands them to Gradio."""

CSS = """
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 8px; }
.card { border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 8px 10px; }
.card .label { font-size: 0.8em; color: var(--ge-subdued); }
.card .value { font-size: 1.45em; font-weight: 600; overflow-wrap: break-word; }  /* a long name wraps, never runs on */
.card .detail { font-size: 0.75em; color: var(--ge-subdued); }
.explain { font-size: 0.92em; }
/* WCAG 2 AA contrast (4.5:1) for everything on the page, which a projector washes out further: Gradio's default
   greys (help lines, slider bounds, the footer), its orange primary buttons with white text, and its link blue on a
   grey group are all lighter than that (axe-core, tests/app/test_browser.py). Light theme only: dark keeps its own. */
:root .gradio-container:not(.dark) { --ge-subdued: var(--neutral-600); --block-info-text-color: var(--neutral-600);
  --body-text-color-subdued: var(--neutral-600); --link-text-color: #1d4ed8; --link-text-color-hover: #1e3a8a;
  --link-text-color-visited: #5b21b6; --button-primary-background-fill: #c2410c;
  --button-primary-background-fill-hover: #9a3412; --button-primary-text-color: white; }
.dark .gradio-container, .gradio-container.dark { --ge-subdued: var(--neutral-300); }
.gradio-container:not(.dark) .show-api, .gradio-container:not(.dark) .built-with { color: var(--neutral-700); }
.gradio-container .json-node:not(.dark-mode) { --text-color: #9a3412; --string-color: #b45309;
  --number-color: #0e7490; --bracket-color: #285e61; --square-bracket-color: #9f1239; --punctuation-color: #3f6f6e;
  --line-number-color: #4b5563; }
.mono textarea { font-family: var(--font-mono); }
/* Tables: a header breaks between words, never inside one ("co mp il es"); a table wider than its box scrolls
   sideways instead of squeezing columns, so a timeline's reasons and a lab's compiled columns stay readable. */
.gradio-container table th, .gradio-container table th * { word-break: keep-all !important;
  overflow-wrap: normal !important; hyphens: none; }
.gradio-container table td { min-width: 4em; }
.gradio-container .table-wrap { overflow-x: auto; }
/* Presentation mode, for a projector: larger text through the theme's own sizes (not a CSS zoom, which would cut
   off the figures and move their hover targets), and no side text (help lines, examples, explanations), so that
   the current input's graph and cards reach the first screen. It drops help, never evidence: a card's detail line
   (the spread, the cache, the break-even) and a claim's header (its link) stay, because a lesson step names them.
   The figures re-fit to their new width (PRESENT_JS). */
body.ge-presentation .gradio-container { --text-xxs: 12px; --text-xs: 13px; --text-sm: 16px; --text-md: 18px;
  --text-lg: 21px; --text-xl: 26px; --text-xxl: 30px; --block-label-text-size: 15px; --block-info-text-size: 15px;
  --block-title-text-size: 16px; --section-header-text-size: 18px; }
body.ge-presentation .ge-aside, body.ge-presentation .explain, body.ge-presentation .info-text { display: none; }
/* Gradio scopes the rules above under its container's classes, which outrank a body class: hence !important.
   The Playground's eight cards in one row at 1280 px (two rows pushed its graph below the first screen). */
body.ge-presentation .card .detail { font-size: 13px !important; }
/* The line where the Code tab's last edit broke (marked by PAGE_JS). */
#ge-code-editor .ge-broken { background: rgba(220, 0, 0, 0.16) !important; }
#ge-code-editor .cm-gutterElement.ge-broken { color: #b00020 !important; font-weight: 700; }
/* On a phone the Playground's columns stack: the input and the graph first, the architecture's controls after
   (below every knob, the input was 1.7 screens down and the graph 3.5). */
@media (max-width: 640px) {
  .ge-playground > .ge-main { order: -1; }
  .ge-main > * { order: 3; }
  .ge-main > :has(.ge-input), .ge-main > .ge-input { order: 1; }
  .ge-main > :has(.ge-graph), .ge-main > .ge-graph { order: 2; }
}
/* A number box's value past its bounds, said beside it (PAGE_JS). */
.ge-clamped { font-size: 12px; color: #8a4b00; margin-top: 2px; }
body.ge-presentation .cards { grid-template-columns: repeat(auto-fit, minmax(98px, 1fr)) !important;
  gap: 6px !important; }
body.ge-presentation .card { padding: 6px 8px !important; }
/* Every tab's name in one row at 1280 px (at the presentation's 18 px they took two). */
body.ge-presentation [role="tab"] { font-size: 15px !important; }
body.ge-presentation .card .value { font-size: 1.05em !important; }
/* A value with a long word ("pack_padded_sequence") smaller rather than broken between letters. */
body.ge-presentation .card .value.long { font-size: 0.85em !important; overflow-wrap: normal; }
/* A claim's experiment sentence and where it was measured: smaller than the evidence, so that a lesson's chart and
   its four cards fit the first screen beside the step. */
body.ge-presentation .ge-claim-head, body.ge-presentation .ge-claim-head *,
body.ge-presentation .ge-claim-status, body.ge-presentation .ge-claim-status * { font-size: 14px !important;
  line-height: 1.35 !important; }
/* A room's code, read from the back row and typed by every student. */
.ge-room-join { display: flex; flex-wrap: wrap; align-items: center; gap: 8px 24px; padding: 8px; }
.ge-room-join svg { width: 185px; height: 185px; }
.ge-hidden { display: none !important; }
/* Projected, the room's box shows only once a room is open (open it before presenting): the step's card keeps the
   first screen. */
body.ge-presentation .ge-room:has(.ge-room-opener) { display: none !important; }
/* Projected with a room open, its box under the step: the code large, the QR code smaller (the step's column). */
body.ge-presentation .ge-room-code { font-size: 48px !important; }
body.ge-presentation .ge-room-join svg { width: 140px !important; height: 140px !important; }
/* The teacher's buttons in the room's box (reveal, run, measure again, the answers' CSV), pressed in front of the
   room: at the size of the step's own buttons, not the small one they have beside the Playground's text. */
body.ge-presentation .ge-room button { font-size: var(--text-lg) !important; padding: 8px 16px !important; }
/* A lesson projected (issue #50: a projected slide's minimum is ~24 pt, 32 px at 720 lines): the step's claim and its
   Do at 28-30 px, the verdict in one line at 30 px above the cards, the cards' values at 28 px; what to notice, the
   question, the timing note, the step's link and notebook are the teacher's (presentation off shows them), and so
   is the verdict's paragraph: its one line stays. The step's card and verdict reach the first screen at 1280x720
   (tests/app/test_browser_lessons.py measures every step). */
.ge-verdict-head { display: none; }
body.ge-presentation .ge-lesson .ge-verdict-head { display: block !important; }
body.ge-presentation .ge-lesson .ge-verdict-head * { font-size: 30px !important; line-height: 1.2 !important;
  margin: 0 !important; }
body.ge-presentation .ge-lesson .ge-verdict, body.ge-presentation .ge-lesson .ge-teachers { display: none !important; }
body.ge-presentation .ge-lesson .ge-step h3 { font-size: 24px !important; margin-bottom: 4px !important; }
body.ge-presentation .ge-lesson .ge-step p, body.ge-presentation .ge-lesson .ge-step strong {
  font-size: 28px !important; line-height: 1.3 !important; }
body.ge-presentation .ge-lesson .ge-step p:nth-of-type(1) strong { font-size: 30px !important; }
body.ge-presentation .ge-lesson .card .value { font-size: 28px !important; line-height: 1.15 !important; }
body.ge-presentation .ge-lesson .card .label { font-size: 20px !important; }
body.ge-presentation .ge-lesson .card .detail { font-size: 17px !important; line-height: 1.25 !important; }
body.ge-presentation .ge-lesson .ge-ready * { font-size: 16px !important; }
/* the verdict and the cards above the chart, the cards across the card's width */
body.ge-presentation .ge-lesson .ge-evidence { flex-direction: column-reverse !important; gap: 8px !important; }
body.ge-presentation .ge-lesson .ge-evidence > * { width: 100% !important; }
body.ge-presentation .ge-lesson .ge-evidence .cards {
  grid-template-columns: repeat(auto-fit, minmax(200px, 1fr)) !important; }
.ge-room-code { font-size: 64px; font-weight: 700; letter-spacing: 0.12em; font-family: monospace; }
"""
# The page's figures are Plotly's, with `responsive` on: after the class changes the layout, each one is re-fitted
# to its container (Gradio sets window.Plotly once the first figure has loaded).
PRESENT_JS = """(on) => {
  document.body.classList.toggle('ge-presentation', on);
  const url = new URL(window.location.href);  // in the address: a reload keeps it
  if (on) url.searchParams.set('present', '1'); else url.searchParams.delete('present');
  window.history.replaceState(null, '', url);
  requestAnimationFrame(() => document.querySelectorAll('.js-plotly-plot').forEach(
    (el) => window.Plotly && window.Plotly.Plots.resize(el)));
  return [];
}"""
# the Code tab's run button, editor, and the element naming the line where the last edit broke
CODE_RUN_ID, CODE_EDITOR_ID, CODE_ERROR_ID = "ge-code-run", "ge-code-editor", "ge-code-error"
LESSON_PREV_ID, LESSON_NEXT_ID = "ge-lesson-prev", "ge-lesson-next"  # the Lessons tab's buttons, a clicker's keys
NODE_PICK_ID = "ge-node-pick"  # hidden: the node clicked in the Playground's graph, sent to the server
STATE_LINK_ID = "ge-state-link"  # the header's link to what is on screen: the Playground's state, or a lesson's step
PAGE_JS = """() => {
  // Gradio 6.31 marks an empty plot or JSON with a bare <div aria-label="Empty value">: ARIA forbids a label on a div
  // without a role (axe's aria-prohibited-attr). It is an image of nothing: say so.
  const label = () => document.querySelectorAll('div.empty[aria-label]:not([role])').forEach(
    (d) => d.setAttribute('role', 'img'));
  // The Code tab's broken line, marked in the editor's gutter and text: the editor draws only the lines in view
  // and redraws them as it scrolls, so the mark is put back after every change of the page.
  const markBroken = () => {
    const line = document.querySelector('#CODE_ERROR_ID [data-line]')?.dataset.line;
    const gutter = [...document.querySelectorAll('#CODE_EDITOR_ID .cm-lineNumbers .cm-gutterElement')];
    gutter.forEach((g) => {
      const on = line !== undefined && g.textContent === line;
      if (g.classList.contains('ge-broken') !== on) g.classList.toggle('ge-broken', on);
    });
    const at = gutter.find((g) => g.classList.contains('ge-broken'))?.getBoundingClientRect().top;
    document.querySelectorAll('#CODE_EDITOR_ID .cm-line').forEach((l) => {
      const on = at !== undefined && Math.abs(l.getBoundingClientRect().top - at) < 2;
      if (l.classList.contains('ge-broken') !== on) l.classList.toggle('ge-broken', on);
    });
  };
  // A click on a node of the Playground's graph names it to the server (the node's first graph node, the figure's
  // customdata), which marks the line that made it: Gradio's Plot has no click event of its own.
  const clickable = () => document.querySelectorAll('.ge-graph .js-plotly-plot').forEach((plot) => {
    if (plot.geClicks || !plot.on) return;
    plot.geClicks = true;
    plot.on('plotly_click', (e) => {
      const node = e.points?.find((p) => typeof p.customdata === 'number')?.customdata;
      const box = document.querySelector('#NODE_PICK_ID textarea, #NODE_PICK_ID input');
      if (node === undefined || !box) return;
      box.value = String(node);
      box.dispatchEvent(new Event('input', {bubbles: true}));  // the box's value, then its button's event
      requestAnimationFrame(() => document.getElementById('NODE_PICK_ID-go')?.click());
    });
  });
  const code = (r) => r.target instanceof Element && r.target.closest('#CODE_EDITOR_ID, #CODE_ERROR_ID');
  new MutationObserver((records) => {
    if (records.some((r) => r.type === 'childList')) { label(); clickable(); }
    if (records.some(code)) markBroken();  // classes too: the editor re-sets a line's own as the cursor moves
  }).observe(document.body, {childList: true, subtree: true, attributes: true, attributeFilter: ['class']});
  label();
  const box = (t) => t instanceof HTMLInputElement && t.type === 'number';
  document.addEventListener('keydown', (e) => { if (e.key === 'Enter' && box(e.target)) e.target.blur(); });
  document.addEventListener('focusin', (e) => { if (box(e.target)) e.target.dataset.settled = e.target.value; });
  // A value past a box's bounds runs clamped, and the box says so beside it for a few seconds (it was silent).
  const said = (t, text) => {
    let n = t.parentElement.querySelector('.ge-clamped');
    if (!n) {
      n = Object.assign(document.createElement('div'), {className: 'ge-clamped'});
      n.setAttribute('role', 'status');
      t.parentElement.append(n);
    }
    n.textContent = text;
    clearTimeout(n.geTimer);
    n.geTimer = setTimeout(() => n.remove(), 6000);
  };
  document.addEventListener('change', (e) => {
    const t = e.target;
    if (!box(t)) return;
    const typed = t.value;
    let v = typed === '' ? NaN : Number(typed);
    if (Number.isNaN(v)) v = Number(t.dataset.settled ?? t.min);
    else if (t.min !== '' && v < Number(t.min)) said(t, `${typed} is below ${t.min}, the least: ${t.min} is used`);
    else if (t.max !== '' && v > Number(t.max)) said(t, `${typed} is past ${t.max}, the most: ${t.max} is used`);
    if (t.min !== '') v = Math.max(v, Number(t.min));
    if (t.max !== '') v = Math.min(v, Number(t.max));
    if (String(v) !== t.value) { t.value = String(v); t.dispatchEvent(new Event('input', {bubbles: true})); }
  }, true);
  // A presenter's clicker sends PageDown/PageUp (a keyboard's arrows too): on the Lessons tab they move the step,
  // unless the focus is in a box that takes them.
  document.addEventListener('keydown', (e) => {
    const step = {PageDown: 'LESSON_NEXT_ID', ArrowRight: 'LESSON_NEXT_ID', PageUp: 'LESSON_PREV_ID',
                  ArrowLeft: 'LESSON_PREV_ID'}[e.key];
    const button = step && document.getElementById(step);
    const typing = e.target.closest?.('input, textarea, select, [contenteditable="true"], .cm-editor, [role="slider"]');
    if (!button || button.offsetParent === null || typing || e.ctrlKey || e.metaKey || e.altKey) return;
    e.preventDefault();
    button.click();
  });
  // Ctrl+Enter in the Code tab's editor runs the edit now (caught before the editor, whose own Ctrl+Enter would
  // insert a line); a pending pause's run is dropped.
  document.addEventListener('keydown', (e) => {
    if (e.key !== 'Enter' || !(e.ctrlKey || e.metaKey) || !e.target.closest?.('#CODE_EDITOR_ID')) return;
    e.preventDefault();
    e.stopPropagation();
    clearTimeout(window.geCodePause);
    document.getElementById('CODE_RUN_ID')?.click();
  }, true);
  // Enter in the editor keeps the line's indentation, four spaces more after a colon: the editor's Python mode
  // indents in its own unit of two, which made the first natural edit an IndentationError. The new line goes in as
  // the editor takes a paste (its own handler, one undo step), so nothing of its state is reached into.
  document.addEventListener('keydown', (e) => {
    if (e.key !== 'Enter' || e.ctrlKey || e.metaKey || e.altKey || e.shiftKey || e.isComposing) return;
    const sel = window.getSelection();
    const at = sel?.anchorNode;
    const line = (at?.nodeType === 1 ? at : at?.parentElement)?.closest?.('#CODE_EDITOR_ID .cm-line');
    if (!line || !sel.isCollapsed) return;
    const before = document.createRange();
    before.setStart(line, 0);
    before.setEnd(at, sel.anchorOffset);
    const indent = line.textContent.match(/^[ ]*/)[0] + (before.toString().trimEnd().endsWith(':') ? '    ' : '');
    const data = new DataTransfer();
    data.setData('text/plain', '\\n' + indent);
    e.preventDefault();
    e.stopPropagation();
    line.closest('.cm-content').dispatchEvent(new ClipboardEvent('paste', {clipboardData: data, bubbles: true}));
  }, true);
}""".replace("CODE_EDITOR_ID", CODE_EDITOR_ID).replace("CODE_RUN_ID", CODE_RUN_ID).replace(
    "CODE_ERROR_ID", CODE_ERROR_ID).replace("LESSON_NEXT_ID", LESSON_NEXT_ID).replace(
    "LESSON_PREV_ID", LESSON_PREV_ID).replace("NODE_PICK_ID", NODE_PICK_ID)

/**
 * The Markdown a lesson's narration is written in, as safe HTML: paragraphs, headings, lists,
 * block quotes, fenced code, **bold**, *italic*, `code` and [links](https://…).
 *
 * Lessons may be uploaded by any instructor and are shown to every student, so the text is
 * escaped *first* and only then given the few tags this module writes itself: no HTML a lesson
 * contains can reach the page, and a link is kept only for http(s), a path or an anchor — never
 * `javascript:`. That is why this is a small renderer of our own rather than a full Markdown
 * library, whose raw-HTML pass-through would need a sanitiser behind it. Pure: node tests it.
 */

const ESCAPES = {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'};
const SAFE_URL = /^(https?:\/\/|\/(?!\/)|#)/i;
const HOLE = '\u0000'; // marks where a finished piece (code, link) goes back in

export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

/** Markdown text -> HTML string (every character of the input escaped or formatted). */
export function renderMarkdown(text) {
  if (text === null || text === undefined) return '';
  const lines = String(text).replaceAll(HOLE, '').replace(/\r\n?/g, '\n').split('\n');
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (line.trim() === '') {
      i += 1;
    } else if (/^\s*```/.test(line)) {
      const code = [];
      for (i += 1; i < lines.length && !/^\s*```/.test(lines[i]); i += 1) code.push(lines[i]);
      i += 1; // the closing fence (or the end)
      out.push(`<pre><code>${escapeHtml(code.join('\n'))}</code></pre>`);
    } else if (/^\s*#{1,6}\s/.test(line)) {
      const [, hashes, title] = /^\s*(#{1,6})\s+(.*)$/.exec(line);
      const level = Math.min(6, hashes.length + 2); // the lesson panel's own heading is h2
      out.push(`<h${level}>${inline(title.replace(/\s+#+\s*$/, ''))}</h${level}>`);
      i += 1;
    } else if (LIST.test(line)) {
      const ordered = /^\s*\d+[.)]\s/.test(line);
      const items = [];
      while (i < lines.length && lines[i].trim() !== '') {
        if (LIST.test(lines[i])) items.push(lines[i].replace(LIST, ''));
        else items[items.length - 1] += ` ${lines[i].trim()}`; // a continuation line
        i += 1;
      }
      const tag = ordered ? 'ol' : 'ul';
      out.push(`<${tag}>${items.map((item) => `<li>${inline(item.trim())}</li>`).join('')}</${tag}>`);
    } else if (/^\s*>/.test(line)) {
      const quoted = [];
      for (; i < lines.length && /^\s*>/.test(lines[i]); i += 1) quoted.push(lines[i].replace(/^\s*>\s?/, ''));
      out.push(`<blockquote>${renderMarkdown(quoted.join('\n'))}</blockquote>`);
    } else {
      const paragraph = [];
      for (; i < lines.length && lines[i].trim() !== '' && !startsBlock(lines[i]); i += 1) paragraph.push(lines[i].trim());
      out.push(`<p>${inline(paragraph.join(' '))}</p>`);
    }
  }
  return out.join('\n');
}

const LIST = /^\s*(?:[-*+]|\d+[.)])\s+/;

function startsBlock(line) {
  return /^\s*(```|#{1,6}\s|>)/.test(line) || LIST.test(line);
}

/** Inline formatting of one block's text: code spans and links first (their insides stay as written). */
function inline(text) {
  const pieces = [];
  const keep = (html) => {
    pieces.push(html);
    return `${HOLE}${pieces.length - 1}${HOLE}`;
  };
  let s = text.replace(/`([^`]+)`/g, (_, code) => keep(`<code>${escapeHtml(code)}</code>`));
  s = s.replace(/\[([^\]]+)\]\(([^()\s]+)\)/g, (whole, label, url) => (SAFE_URL.test(url)
    ? keep(`<a href="${escapeHtml(url)}" target="_blank" rel="noopener noreferrer">${emphasis(escapeHtml(label))}</a>`)
    : whole));
  s = emphasis(escapeHtml(s));
  return s.replace(new RegExp(`${HOLE}(\\d+)${HOLE}`, 'g'), (_, n) => pieces[Number(n)]);
}

function emphasis(s) {
  return s
    .replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, '<strong>$1</strong>')
    .replace(/(^|[^\w])__(?=\S)([\s\S]*?\S)__(?!\w)/g, '$1<strong>$2</strong>')
    .replace(/(^|[^*\w])\*([^\s*](?:[^*]*?[^\s*])?)\*(?!\*)/g, '$1<em>$2</em>')
    .replace(/(^|[^\w])_([^\s_](?:[^_]*?[^\s_])?)_(?!\w)/g, '$1<em>$2</em>');
}

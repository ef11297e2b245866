/**
 * The lesson list: every lesson with its title, description, length and number of steps, and
 * buttons to play it (the lessons page: a walkthrough; the instructor page: run it for the
 * class). A lesson file that does not load is listed as broken — file, line and reason — not
 * left out. Cards are a D3 keyed join on the lesson id, so a reload of the list (after the
 * instructor saves a lesson) updates the cards that are there.
 */
import d3 from '/vendor/d3.mjs';
import {parseProblems} from '../lesson.js';
import {renderMarkdown} from '../markdown.js';

/** buttons: [{action, label, run(lesson)}]; the list is drawn by `render(lessons)`. */
export function createLessonList(container, {buttons}) {
  const root = d3.select(container);
  const empty = root.append('p').attr('class', 'empty').text('Loading the lessons…');
  const list = root.append('ul').attr('class', 'lesson-cards');

  function render(lessons) {
    empty.text(lessons.length ? '' : 'There are no lessons yet.').classed('hidden', lessons.length > 0);
    container.setAttribute('aria-busy', 'false');
    list.selectAll('li.lesson-card').data(lessons, (l) => l.id).join(
      (enter) => enter.append('li').attr('class', 'lesson-card')
        .attr('data-lesson-id', (l) => l.id)
        .call((li) => {
          const head = li.append('div').attr('class', 'lesson-head');
          head.append('h3').attr('class', 'lesson-title');
          head.append('span').attr('class', 'badge lesson-meta');
          li.append('div').attr('class', 'lesson-summary');
          li.append('ul').attr('class', 'lesson-problems');
          li.append('div').attr('class', 'lesson-buttons');
        }),
    )
      .order()
      .attr('data-broken', (l) => String(Boolean(l.broken)))
      .classed('broken', (l) => Boolean(l.broken))
      .each(function draw(l) {
        const li = d3.select(this);
        li.select('.lesson-title').text(l.broken ? `⚠ ${l.id} (broken)` : l.title);
        li.select('.lesson-meta').text(l.broken ? 'cannot be played'
          : `${l.minutes} min · ${l.steps.length} steps${l.id.includes('/') ? ` · by ${l.id.split('/')[0]}` : ''}`);
        li.select('.lesson-summary').html(l.broken ? '' : renderMarkdown(l.summary));
        li.select('.lesson-problems').selectAll('li').data(l.broken ? parseProblems(l.error) : []).join('li')
          .attr('class', 'problem')
          .attr('data-file', (p) => p.file ?? '')
          .attr('data-line', (p) => p.line ?? '')
          .call((p) => p.selectAll('*').remove())
          .call((p) => p.append('code').attr('class', 'where')
            .text((p) => (p.file ? `${p.file}${p.line ? `:${p.line}` : ''}` : '')))
          .call((p) => p.append('span').text((p) => ` ${p.message}`));
        li.select('.lesson-buttons').selectAll('button').data(l.broken ? [] : buttons, (b) => b.action).join('button')
          .attr('type', 'button')
          .attr('data-action', (b) => b.action)
          .attr('aria-label', (b) => `${b.label}: ${l.title}`)
          .text((b) => b.label)
          .on('click', async (event, b) => {
            const button = event.currentTarget;
            button.disabled = true;
            try {
              await b.run(l);
            } finally {
              button.disabled = false;
            }
          });
      });
  }

  return {render};
}

/**
 * The lesson list: every lesson with its title, description, length and number of stops and
 * questions, and buttons to play it (the lessons page: a walkthrough; the instructor page: run
 * it for the class). A lesson file that does not load is listed as broken — file, line and
 * reason — not left out. With the course's parts (the lessons page) the cards go part by part,
 * in teaching order, each saying what it needs first and teaches, whether this browser has done
 * it and how its predictions went, and where to start. Cards are a D3 keyed join on the lesson
 * id, so a reload of the list updates the cards that are there.
 */
import d3 from '/vendor/d3.mjs';
import {firstToDo, scoreText} from '../course.js';
import {parseProblems} from '../lesson.js';
import {renderMarkdown} from '../markdown.js';

const OTHERS = 'More lessons';

/** buttons: [{action, label, run(lesson)}]; the list is drawn by `render(lessons, {parts, progress})`. */
export function createLessonList(container, {buttons}) {
  const root = d3.select(container);
  const empty = root.append('p').attr('class', 'empty').text('Loading the lessons…');
  const sections = root.append('div').attr('class', 'course-parts');

  function render(lessons, {parts = [], progress = null} = {}) {
    empty.text(lessons.length ? '' : 'There are no lessons yet.').classed('hidden', lessons.length > 0);
    container.setAttribute('aria-busy', 'false');
    const titles = Object.fromEntries(lessons.map((l) => [l.id, l.title ?? l.id]));
    const start = progress ? firstToDo(parts, progress) : null;
    const grouped = parts.length ? [...parts.map((p) => ({title: p.title, lessons: lessons.filter((l) => l.part === p.title)})),
      {title: OTHERS, lessons: lessons.filter((l) => !l.part)}].filter((g) => g.lessons.length)
      : [{title: null, lessons}];
    const part = sections.selectAll('section.course-part').data(grouped, (g) => g.title ?? '').join(
      (enter) => enter.append('section').attr('class', 'course-part')
        .call((s) => s.append('h2').attr('class', 'part-title'))
        .call((s) => s.append('ul').attr('class', 'lesson-cards')),
    ).order();
    part.select('.part-title').text((g, i) => (g.title ? `${g.title === OTHERS ? '' : `Part ${i + 1}. `}${g.title}` : ''))
      .classed('hidden', (g) => !g.title);
    part.each(function drawPart(g) {
      drawCards(d3.select(this).select('ul'), g.lessons, {titles, progress, start});
    });
  }

  function drawCards(list, lessons, {titles, progress, start}) {
    list.selectAll('li.lesson-card').data(lessons, (l) => l.id).join(
      (enter) => enter.append('li').attr('class', 'lesson-card')
        .attr('data-lesson-id', (l) => l.id)
        .call((li) => {
          const head = li.append('div').attr('class', 'lesson-head');
          head.append('h3').attr('class', 'lesson-title');
          head.append('span').attr('class', 'badge lesson-meta');
          head.append('span').attr('class', 'badge lesson-start').text('▶ start here');
          li.append('div').attr('class', 'lesson-summary');
          li.append('p').attr('class', 'lesson-course');
          li.append('p').attr('class', 'lesson-done');
          li.append('ul').attr('class', 'lesson-problems');
          li.append('div').attr('class', 'lesson-buttons');
        }),
    )
      .order()
      .attr('data-broken', (l) => String(Boolean(l.broken)))
      .attr('data-done', (l) => String(Boolean(progress?.[l.id]?.done)))
      .attr('data-start', (l) => String(l.id === start))
      .classed('broken', (l) => Boolean(l.broken))
      .each(function draw(l) {
        drawCard(d3.select(this), l, {titles, progress, start});
      });
  }

  function drawCard(li, l, {titles, progress, start}) {
    li.select('.lesson-title').text(l.broken ? `⚠ ${l.id} (broken)` : l.title);
    const stops = (l.steps ?? []).filter((s) => s.stop).length;
    li.select('.lesson-meta').text(l.broken ? 'cannot be played'
      : `${l.minutes} min · ${stops} stops · ${l.predictions} questions${l.id.includes('/') ? ` · by ${l.id.split('/')[0]}` : ''}`);
    li.select('.lesson-start').classed('hidden', l.id !== start);
    li.select('.lesson-summary').html(l.broken ? '' : renderMarkdown(l.summary));
    const after = (l.requires ?? []).map((id) => titles[id] ?? id);
    li.select('.lesson-course').text(l.broken ? '' : [after.length ? `After: ${after.join('; ')}.` : '',
      l.teaches?.length ? `Teaches: ${l.teaches.join(', ')}.` : ''].filter(Boolean).join(' '))
      .classed('hidden', l.broken || (!after.length && !l.teaches?.length));
    li.select('.lesson-done').text(scoreText(progress?.[l.id])).classed('hidden', !progress?.[l.id]?.done);
    li.select('.lesson-problems').selectAll('li').data(l.broken ? parseProblems(l.error) : []).join('li')
      .attr('class', 'problem')
      .attr('data-file', (p) => p.file ?? '')
      .attr('data-line', (p) => p.line ?? '')
      .call((p) => p.selectAll('*').remove())
      .call((p) => p.append('code').attr('class', 'where').text((p) => (p.file ? `${p.file}${p.line ? `:${p.line}` : ''}` : '')))
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
  }

  return {render};
}

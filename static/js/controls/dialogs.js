/**
 * Modal questions built on <dialog>: a choice between buttons, and a small form. Both resolve
 * a promise (null when cancelled), so callers read like `if (!(await ask(...))) return;`.
 */

/** Ask `message`; choices: [{value, label}]; resolves the chosen value, or null (Escape, Cancel). */
export function choose(title, message, choices) {
  const dialog = make(title);
  const p = document.createElement('p');
  p.textContent = message;
  const row = document.createElement('div');
  row.className = 'dialog-buttons';
  dialog.append(p, row);
  return new Promise((resolve) => {
    for (const choice of [...choices, {value: null, label: 'Cancel'}]) {
      const button = document.createElement('button');
      button.type = 'button';
      button.textContent = choice.label;
      if (choice.value === null) button.className = 'secondary';
      button.addEventListener('click', () => {
        dialog.returnValue = '';
        finish(dialog, resolve, choice.value);
      });
      row.append(button);
    }
    dialog.addEventListener('cancel', () => finish(dialog, resolve, null));
    open(dialog);
  });
}

/**
 * A form. fields: [{name, label, type: text|number|select|checkbox, options: [{value, label}],
 * value, min, max, required, help}]. `check(values)` may return a message that keeps the form
 * open. Resolves the values (numbers as numbers, checkboxes as booleans), or null.
 */
export function askForm(title, fields, {submit = 'OK', check = () => null, intro = ''} = {}) {
  const dialog = make(title);
  const form = document.createElement('form');
  form.method = 'dialog';
  if (intro) {
    const p = document.createElement('p');
    p.textContent = intro;
    form.append(p);
  }
  const inputs = new Map();
  for (const field of fields) {
    const id = `f-${title.replace(/\W+/g, '-')}-${field.name}`;
    const label = document.createElement('label');
    label.htmlFor = id;
    label.className = 'field';
    label.append(document.createTextNode(field.label));
    const input = field.type === 'select' ? document.createElement('select') : document.createElement('input');
    input.id = id;
    input.name = field.name;
    if (field.type === 'select') {
      for (const option of field.options) input.append(new Option(option.label, String(option.value)));
    } else {
      input.type = field.type ?? 'text';
      if (field.min !== undefined) input.min = field.min;
      if (field.max !== undefined) input.max = field.max;
      if (field.placeholder) input.placeholder = field.placeholder;
    }
    if (field.type === 'checkbox') input.checked = Boolean(field.value);
    else if (field.value !== undefined && field.value !== null) input.value = String(field.value);
    if (field.required) input.required = true;
    label.append(input);
    if (field.help) {
      const help = document.createElement('small');
      help.textContent = field.help;
      label.append(help);
    }
    form.append(label);
    inputs.set(field.name, {field, input});
  }
  const problem = document.createElement('p');
  problem.className = 'form-problem';
  problem.setAttribute('role', 'alert');
  const row = document.createElement('div');
  row.className = 'dialog-buttons';
  const ok = document.createElement('button');
  ok.type = 'submit';
  ok.textContent = submit;
  const cancel = document.createElement('button');
  cancel.type = 'button';
  cancel.className = 'secondary';
  cancel.textContent = 'Cancel';
  row.append(ok, cancel);
  form.append(problem, row);
  dialog.append(form);
  return new Promise((resolve) => {
    cancel.addEventListener('click', () => finish(dialog, resolve, null));
    dialog.addEventListener('cancel', () => finish(dialog, resolve, null));
    form.addEventListener('input', () => { problem.textContent = ''; });
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const values = {};
      for (const [name, {field, input}] of inputs) {
        if (field.type === 'checkbox') values[name] = input.checked;
        else if (field.type === 'number') values[name] = input.value === '' ? null : Number(input.value);
        else values[name] = input.value;
      }
      const message = check(values);
      if (message) {
        problem.textContent = message;
        return;
      }
      finish(dialog, resolve, values);
    });
    open(dialog);
  });
}

function make(title) {
  const dialog = document.createElement('dialog');
  dialog.className = 'modal';
  const h = document.createElement('h2');
  h.textContent = title;
  dialog.setAttribute('aria-label', title);
  dialog.append(h);
  return dialog;
}

function open(dialog) {
  document.body.append(dialog);
  dialog.showModal();
}

function finish(dialog, resolve, value) {
  if (dialog.open) dialog.close();
  dialog.remove();
  resolve(value);
}

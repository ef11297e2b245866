/**
 * Messages for the student: errors (a refused fault's reason, a network failure) in a
 * role="alert" region, kept until dismissed — never silent; confirmations in a role="status"
 * region that clears itself.
 */
const INFO_MS = 6000;
const MAX_ERRORS = 5;

export function createAlerts(errorRegion, infoRegion) {
  function add(region, text, kind) {
    const p = document.createElement('p');
    p.className = `message ${kind}`;
    const span = document.createElement('span');
    span.textContent = text;
    const close = document.createElement('button');
    close.type = 'button';
    close.className = 'dismiss';
    close.textContent = '×';
    close.setAttribute('aria-label', 'Dismiss message');
    close.addEventListener('click', () => p.remove());
    p.append(span, close);
    region.append(p);
    return p;
  }

  return {
    error(text) {
      while (errorRegion.children.length >= MAX_ERRORS) errorRegion.firstElementChild.remove();
      add(errorRegion, text, 'error');
    },
    info(text) {
      const p = add(infoRegion, text, 'info');
      setTimeout(() => p.remove(), INFO_MS);
    },
    clear() {
      errorRegion.replaceChildren();
      infoRegion.replaceChildren();
    },
  };
}

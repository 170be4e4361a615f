import { Api, ApiError, type AgentView, type Me } from './api';
import { Composer } from './composer';
import { ConversationList } from './conversation-list';
import { h, uid } from './dom';
import { language, LANGUAGES, loadLanguage, setLanguage, t, type Language } from './i18n';
import { ConversationSession } from './session';
import { formattedReplies, setFormattedReplies } from './settings';

/**
 * The portal's web client: sign in through the org's identity provider (a session cookie) or with
 * an API key (kept in localStorage, for developers), pick or start a conversation (its id is in
 * the URL, `/c/<id>`; a new one is `/?agent=<id>` until its first message creates it), and talk to
 * the agent.
 */

const KEY = 'portal.apiKey';
const RETRY_BOOT_MS = 3000;
const app = document.getElementById('app')!;
const announcer = document.getElementById('announcer')!;

function announce(text: string): void {
  // Cleared first, so the same words twice are still said twice.
  announcer.textContent = '';
  window.setTimeout(() => (announcer.textContent = text), 50);
}

function conversationIdFromUrl(): string | null {
  const legacy = /^#\/c\/([^/?#]+)/.exec(location.hash);
  if (legacy) {
    history.replaceState(null, '', `/c/${legacy[1]}`);
    return decodeURIComponent(legacy[1]);
  }
  const match = /^\/c\/([^/?#]+)/.exec(location.pathname);
  return match ? decodeURIComponent(match[1]) : null;
}

/** The agent of a conversation not started yet (`/?agent=<id>`). */
function newAgentFromUrl(): string | null {
  return location.pathname === '/' ? new URLSearchParams(location.search).get('agent') : null;
}

/** The language switch, on the sign-in page and in the header: the page is drawn again in it. */
function languageSwitch(): HTMLElement {
  const id = uid('language');
  const select = h(
    'select',
    { id, class: 'language' },
    ...Object.entries(LANGUAGES).map(([code, name]) =>
      h('option', { value: code, lang: code, selected: code === language() }, name),
    ),
  );
  select.addEventListener('change', () => {
    setLanguage(select.value as Language);
    location.reload();
  });
  return h(
    'span',
    { class: 'setting' },
    h('label', { for: id, class: 'visually-hidden' }, t('app.language')),
    select,
  );
}

function signIn(message = ''): void {
  const keyId = uid('key');
  const field = h('input', {
    id: keyId,
    type: 'password',
    autocomplete: 'current-password',
    required: true,
    spellcheck: 'false',
  });
  const error = h('p', { class: 'form-error', role: 'alert' }, message);
  const button = h('button', { type: 'submit' }, t('signIn.submit'));
  const providers = h('div', { class: 'providers' });
  const form = h(
    'form',
    { class: 'sign-in', 'aria-label': t('signIn.title') },
    h('h1', {}, t('app.name')),
    providers,
    h('label', { for: keyId }, t('signIn.apiKey')),
    field,
    button,
    error,
    languageSwitch(),
  );
  // One button per org identity provider: the browser goes there and comes back signed in.
  new Api(null).providers().then(
    (list) =>
      providers.replaceChildren(
        ...list.map((p) => {
          const go = h('button', { type: 'button' }, t('signIn.with', { name: p.name }));
          go.addEventListener('click', () => location.assign(p.loginUrl));
          return go;
        }),
      ),
    () => undefined,
  );
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const key = field.value.trim();
    if (!key) return;
    button.disabled = true;
    error.textContent = '';
    try {
      const api = new Api(key);
      const me = await api.me();
      localStorage.setItem(KEY, key);
      start(api, me);
    } catch (err) {
      error.textContent =
        err instanceof ApiError && err.status === 401 ? t('signIn.refused') : (err as Error).message;
      button.disabled = false;
    }
  });
  document.title = `${t('signIn.title')} · ${t('app.name')}`;
  app.replaceChildren(h('main', { class: 'sign-in-page' }, form));
  field.focus();
}

function signOut(message = ''): void {
  localStorage.removeItem(KEY);
  session?.close();
  session = null;
  signIn(message);
}

let session: ConversationSession | null = null;

function start(api: Api, me: Me): void {
  api.onUnauthorized = () => signOut(api.apiKey ? t('signIn.keyExpired') : t('signIn.sessionEnded'));
  const main = h('main', { class: 'main', id: 'main' });
  const agentId = uid('agent');
  const agentSelect = h('select', { id: agentId });
  // Enabled once the agents have loaded: a click before that would start nothing.
  const newButton = h('button', { type: 'submit', disabled: true }, t('new.button'));
  const newError = h('p', { class: 'form-error', role: 'alert' });
  const newForm = h(
    'form',
    { class: 'new-conversation', 'aria-label': t('new.button') },
    h('label', { for: agentId }, t('new.agent')),
    agentSelect,
    newButton,
    newError,
  );
  const signOutButton = h('button', { type: 'button', class: 'link' }, t('app.signOut'));
  signOutButton.addEventListener('click', async () => {
    // A browser session ends on the server too (an API key has none to end).
    if (!api.apiKey) await api.logout().catch(() => undefined);
    signOut();
  });

  const formattedId = uid('formatted');
  const formatted = h('input', {
    id: formattedId,
    type: 'checkbox',
    role: 'switch',
    checked: formattedReplies(),
  });
  formatted.addEventListener('change', () => setFormattedReplies(formatted.checked));

  // On a phone the list is a drawer, opened from the header.
  const sideId = uid('side');
  const drawerButton = h(
    'button',
    { type: 'button', class: 'drawer-toggle', 'aria-controls': sideId, 'aria-expanded': 'false' },
    h('span', { 'aria-hidden': 'true' }, '☰ '),
    t('app.conversations'),
  );
  const connection = h('p', { class: 'connection', role: 'status' });

  let agents: AgentView[] = [];
  const list = new ConversationList({
    api,
    agents: () => agents,
    current: conversationIdFromUrl,
    open: (id) => navigate(id),
    onDeleted: () => navigate(null),
    onRefreshed: () => showTitle(),
    announce,
  });
  const side = h(
    'nav',
    { class: 'side', id: sideId, 'aria-label': t('app.conversations') },
    newForm,
    list.el,
  );
  const backdrop = h('div', { class: 'backdrop', 'aria-hidden': 'true' });
  const setDrawer = (open: boolean) => {
    side.classList.toggle('open', open);
    backdrop.classList.toggle('open', open);
    drawerButton.setAttribute('aria-expanded', String(open));
    if (open) side.querySelector<HTMLElement>('select, input, a')?.focus();
  };
  drawerButton.addEventListener('click', () => setDrawer(!side.classList.contains('open')));
  backdrop.addEventListener('click', () => setDrawer(false));
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && side.classList.contains('open')) {
      setDrawer(false);
      drawerButton.focus();
    }
  });

  app.replaceChildren(
    h('a', { class: 'skip', href: '#main' }, t('app.skip')),
    h(
      'header',
      { class: 'top' },
      drawerButton,
      h('span', { class: 'brand' }, t('app.name')),
      h('span', { class: 'setting' }, formatted, h('label', { for: formattedId }, t('settings.formatted'))),
      languageSwitch(),
      h('span', { class: 'who' }, `${me.name ?? me.userId} · ${me.orgId}`),
      signOutButton,
    ),
    side,
    backdrop,
    main,
    connection,
  );

  /** The open conversation's heading, renamed when its title arrives. */
  let heading: HTMLElement | null = null;

  /** The open conversation's title as the list knows it, in its heading and the tab. */
  function showTitle(): void {
    const current = conversationIdFromUrl();
    const title = current ? list.title(current) : null;
    if (heading && title && heading.textContent !== title) {
      heading.textContent = title;
      document.title = `${title} · ${t('app.name')}`;
    }
  }
  const drawList = () => {
    showTitle();
    list.draw();
  };
  const refreshList = () => list.refresh();

  const onConnection = (up: boolean) => {
    connection.textContent = up ? '' : t('app.connectionLost');
    connection.classList.toggle('down', !up);
  };

  /** A conversation not started yet: the composer alone; its first message creates it. */
  const openNew = async (agent: AgentView) => {
    // The conversation left behind goes at once: nothing is typed into it meanwhile.
    main.replaceChildren(h('p', { class: 'loading' }, t('conversation.opening')));
    const [models, skills] = await Promise.all([api.models().catch(() => []), api.skills().catch(() => [])]);
    if (newAgentFromUrl() !== agent.id || conversationIdFromUrl()) return; // moved on meanwhile
    const model = models.find((m) => m.id === agent.model);
    const composer = new Composer({
      api,
      conversationId: null,
      create: async () => {
        const { id } = await api.createConversation(agent.id);
        return id;
      },
      onSent: ({ conversationId, turnId }) => {
        history.replaceState(null, '', `/c/${encodeURIComponent(conversationId)}`);
        void refreshList();
        void route(turnId);
      },
      agent,
      model: { id: agent.model, sees: model ? model.vision !== null : true },
      skills,
      reasons: model?.reasoning ?? true,
      effort: agent.effort,
      openTurn: () => null,
    });
    document.title = `${t('list.untitled')} · ${t('app.name')}`;
    heading = h('h1', {}, t('list.untitled'));
    main.replaceChildren(
      h(
        'div',
        { class: 'conversation-head' },
        heading,
        h('span', { class: 'agent-name' }, agent.name || agent.id),
      ),
      h(
        'section',
        { class: 'conversation' },
        h(
          'div',
          { class: 'scroller' },
          h('p', { class: 'empty' }, t('new.ready', { agent: agent.name || agent.id })),
        ),
        h('div', { class: 'composer-dock' }, composer.el),
      ),
    );
    composer.focus();
  };

  /** Shows what the URL names; `sentTurnId` is the turn a first message has just started there. */
  const route = async (sentTurnId?: string) => {
    session?.close();
    session = null;
    heading = null;
    onConnection(true);
    drawList();
    const id = conversationIdFromUrl();
    if (!id) {
      const agent = agents.find((a) => a.id === newAgentFromUrl());
      if (agent) return openNew(agent);
      document.title = t('app.name');
      main.replaceChildren(h('div', { class: 'empty' }, h('p', {}, t('new.hint'))));
      return;
    }
    const current = new ConversationSession(api, id, sentTurnId, {
      announce,
      onSettled: () => {
        void refreshList();
        // The title comes from a summary call after the first turn settles.
        window.setTimeout(() => void refreshList(), 4000);
      },
      onFatal: (status) => {
        if (status === 401) api.onUnauthorized();
        else if (status === 404)
          main.replaceChildren(h('div', { class: 'empty' }, h('p', {}, t('conversation.missing'))));
      },
      onConnection: (up) => {
        if (session === current) onConnection(up);
      },
    });
    session = current;
    main.replaceChildren(h('p', { class: 'loading' }, t('conversation.opening')));
    try {
      const conversation = await current.open();
      if (session !== current) return;
      const agent = agents.find((a) => a.id === conversation.agentId);
      const title = conversation.title ?? t('list.untitled');
      document.title = `${title} · ${t('app.name')}`;
      heading = h('h1', {}, title);
      main.replaceChildren(
        h(
          'div',
          { class: 'conversation-head' },
          heading,
          h('span', { class: 'agent-name' }, agent?.name ?? conversation.agentId),
        ),
        current.el,
      );
      current.focus();
    } catch (err) {
      if (session !== current) return;
      const missing = err instanceof ApiError && err.status === 404;
      main.replaceChildren(
        h(
          'div',
          { class: 'empty' },
          h('p', { role: 'alert' }, missing ? t('conversation.missing') : (err as Error).message),
        ),
      );
    }
  };

  const navigate = (id: string | null, agent?: string) => {
    const url = id ? `/c/${encodeURIComponent(id)}` : agent ? `/?agent=${encodeURIComponent(agent)}` : '/';
    history.pushState(null, '', url);
    setDrawer(false);
    void route();
  };
  window.onpopstate = () => {
    setDrawer(false);
    void route();
  };

  // Nothing is created here: the conversation starts with its first message.
  newForm.addEventListener('submit', (e) => {
    e.preventDefault();
    if (agentSelect.value) navigate(null, agentSelect.value);
  });

  void (async () => {
    try {
      agents = await api.agents();
    } catch {
      agents = [];
    }
    agentSelect.replaceChildren(...agents.map((a) => h('option', { value: a.id }, a.name || a.id)));
    newButton.disabled = agents.length === 0;
    if (agents.length === 0) newError.textContent = t('new.noAgent');
    drawList();
    void route();
  })();
  void refreshList();
}

/**
 * The portal could not be reached (not a refused key): say so and try again, rather than sending
 * the person to the sign-in form.
 */
function unreachable(err: unknown, retry: () => void): void {
  const again = h('button', { type: 'button' }, t('app.tryAgain'));
  const timer = window.setTimeout(retry, RETRY_BOOT_MS);
  again.addEventListener('click', () => {
    window.clearTimeout(timer);
    retry();
  });
  document.title = t('app.name');
  app.replaceChildren(
    h(
      'main',
      { class: 'sign-in-page' },
      h(
        'div',
        { class: 'sign-in' },
        h('p', { role: 'alert' }, t('app.unreachable', { message: (err as Error).message })),
        again,
      ),
    ),
  );
}

function boot(): void {
  const saved = localStorage.getItem(KEY);
  // Without a key: back from the identity provider, or a session still open (the cookie signs).
  const api = new Api(saved);
  api.me().then(
    (me) => start(api, me),
    (err) => {
      if (err instanceof ApiError && err.status === 401) signIn(saved ? t('signIn.keyExpired') : '');
      else unreachable(err, boot);
    },
  );
}
void loadLanguage().then(boot);

import { Api, ApiError, type AgentView, type ConversationSummary, type Me } from './api';
import { h, uid } from './dom';
import { ConversationSession } from './session';

/**
 * The portal's web client: sign in through the org's identity provider (a session cookie) or with
 * an API key (kept in localStorage, for developers), pick or start a conversation (its id is in
 * the URL, `/c/<id>`), and talk to the agent.
 */

const KEY = 'portal.apiKey';
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
  const button = h('button', { type: 'submit' }, 'Sign in');
  const providers = h('div', { class: 'providers' });
  const form = h(
    'form',
    { class: 'sign-in', 'aria-label': 'Sign in' },
    h('h1', {}, 'Portal'),
    providers,
    h('label', { for: keyId }, 'API key'),
    field,
    button,
    error,
  );
  // One button per org identity provider: the browser goes there and comes back signed in.
  new Api(null).providers().then(
    (list) =>
      providers.replaceChildren(
        ...list.map((p) => {
          const go = h('button', { type: 'button' }, `Sign in with ${p.name}`);
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
        err instanceof ApiError && err.status === 401 ? 'That key was not accepted.' : (err as Error).message;
      button.disabled = false;
    }
  });
  document.title = 'Sign in · Portal';
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
  api.onUnauthorized = () =>
    signOut(
      api.apiKey
        ? 'Your key is no longer accepted. Sign in again.'
        : 'Your session has ended. Sign in again.',
    );
  const main = h('main', { class: 'main', id: 'main' });
  const list = h('ul', { class: 'conversation-list' });
  const agentId = uid('agent');
  const agentSelect = h('select', { id: agentId });
  // Enabled once the agents have loaded: a click before that would start nothing.
  const newButton = h('button', { type: 'submit', disabled: true }, 'New conversation');
  const newError = h('p', { class: 'form-error', role: 'alert' });
  const newForm = h(
    'form',
    { class: 'new-conversation', 'aria-label': 'New conversation' },
    h('label', { for: agentId }, 'Agent'),
    agentSelect,
    newButton,
    newError,
  );
  const signOutButton = h('button', { type: 'button', class: 'link' }, 'Sign out');
  signOutButton.addEventListener('click', async () => {
    // A browser session ends on the server too (an API key has none to end).
    if (!api.apiKey) await api.logout().catch(() => undefined);
    signOut();
  });

  app.replaceChildren(
    h('a', { class: 'skip', href: '#main' }, 'Skip to the conversation'),
    h(
      'header',
      { class: 'top' },
      h('span', { class: 'brand' }, 'Portal'),
      h('span', { class: 'who' }, `${me.name ?? me.userId} · ${me.orgId}`),
      signOutButton,
    ),
    h('nav', { class: 'side', 'aria-label': 'Conversations' }, newForm, list),
    main,
  );

  let agents: AgentView[] = [];
  let conversations: ConversationSummary[] = [];
  /** The open conversation's heading, renamed when its title arrives. */
  let heading: HTMLElement | null = null;

  const drawList = () => {
    const current = conversationIdFromUrl();
    const title = conversations.find((c) => c.id === current)?.title;
    if (heading && title && heading.textContent !== title) {
      heading.textContent = title;
      document.title = `${title} · Portal`;
    }
    list.replaceChildren(
      ...conversations.map((c) => {
        const agent = agents.find((a) => a.id === c.agentId);
        const link = h(
          'a',
          { href: `/c/${encodeURIComponent(c.id)}`, 'aria-current': c.id === current ? 'page' : null },
          h('span', { class: 'title' }, c.title ?? 'New conversation'),
          h('span', { class: 'meta' }, `${agent?.name ?? c.agentId} · ${when(c.updatedAt)}`),
        );
        link.addEventListener('click', (e) => {
          if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
          e.preventDefault();
          navigate(c.id);
        });
        return h('li', {}, link);
      }),
    );
  };

  const refreshList = async () => {
    try {
      conversations = await api.conversations();
      drawList();
    } catch {
      // kept as it was
    }
  };

  const route = async () => {
    session?.close();
    session = null;
    heading = null;
    drawList();
    const id = conversationIdFromUrl();
    if (!id) {
      document.title = 'Portal';
      main.replaceChildren(
        h(
          'div',
          { class: 'empty' },
          h('p', {}, 'Pick an agent and start a new conversation, or open one from the list.'),
        ),
      );
      return;
    }
    const current = new ConversationSession(api, id, {
      announce,
      onSettled: () => {
        void refreshList();
        // The title comes from a summary call after the first turn settles.
        window.setTimeout(() => void refreshList(), 4000);
      },
      onFatal: (status) => {
        if (status === 401) api.onUnauthorized();
        else if (status === 404)
          main.replaceChildren(h('div', { class: 'empty' }, h('p', {}, 'This conversation does not exist.')));
      },
    });
    session = current;
    main.replaceChildren(h('p', { class: 'loading' }, 'Opening…'));
    try {
      const conversation = await current.open();
      if (session !== current) return;
      const agent = agents.find((a) => a.id === conversation.agentId);
      document.title = `${conversation.title ?? 'New conversation'} · Portal`;
      heading = h('h1', {}, conversation.title ?? 'New conversation');
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
          h('p', { role: 'alert' }, missing ? 'This conversation does not exist.' : (err as Error).message),
        ),
      );
    }
  };

  const navigate = (id: string | null) => {
    history.pushState(null, '', id ? `/c/${encodeURIComponent(id)}` : '/');
    void route();
  };
  window.onpopstate = () => void route();

  newForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!agentSelect.value) return;
    newButton.disabled = true;
    newError.textContent = '';
    try {
      const { id } = await api.createConversation(agentSelect.value);
      await refreshList();
      navigate(id);
    } catch (err) {
      newError.textContent = (err as Error).message;
    } finally {
      newButton.disabled = agentSelect.options.length === 0;
    }
  });

  void (async () => {
    try {
      agents = await api.agents();
    } catch {
      agents = [];
    }
    agentSelect.replaceChildren(...agents.map((a) => h('option', { value: a.id }, a.name || a.id)));
    newButton.disabled = agents.length === 0;
    if (agents.length === 0) newError.textContent = 'No agent is available to you.';
    drawList();
  })();
  void refreshList();
  void route();
}

function when(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '';
  const today = new Date().toDateString() === date.toDateString();
  return today
    ? date.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })
    : date.toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
}

const saved = localStorage.getItem(KEY);
if (saved) {
  const api = new Api(saved);
  api.me().then(
    (me) => start(api, me),
    (err) =>
      signIn(
        err instanceof ApiError && err.status === 401
          ? 'Your key is no longer accepted.'
          : `The portal did not answer (${(err as Error).message}). Sign in again.`,
      ),
  );
} else {
  // Back from the identity provider, or a session still open: the cookie signs the requests.
  const api = new Api(null);
  api.me().then(
    (me) => start(api, me),
    () => signIn(),
  );
}

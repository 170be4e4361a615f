/// <reference types="jest" />
// The lib builds with node types only; this helper runs inside Jest alone, so it takes Jest's.
import 'reflect-metadata';

/** A class, abstract or not, whose instances are `T`. */
type Class<T = any> = abstract new (...args: any[]) => T;

/** What Nest injects by: a class, or a string or symbol token (`@Inject(CONFIG)`). */
type Token = Class | string | symbol;

/** `{ name: Class }` → `{ name: jest.Mocked<instance> }`. */
type MocksOf<M extends Record<string, Class>> = { [K in keyof M]: jest.Mocked<InstanceType<M[K]>> };

interface TestServiceOptions<M extends Record<string, Class>, C extends Record<string, Class>> {
  /** Injected dependencies the test drives, by the name it reads them as: each is an `automock`. */
  mocks?: M;
  /**
   * Classes the service constructs itself (`new TurnRepository(em)` inside a transaction): their
   * prototype methods are mocked in place (`mockConstructed`), so every such instance answers
   * through `mocks[name]`.
   */
  constructed?: C;
  /** Values for tokens that are not classes (a config object under a symbol), or real collaborators. */
  provide?: ReadonlyArray<readonly [Token, unknown]>;
  /**
   * Collaborators built for real, wired the same way (the same mock for the same class), for a
   * service whose rules live partly in services it injects: only their repositories are mocked.
   */
  real?: readonly Class[];
  /**
   * The constructor's arguments, for a class without Nest metadata (a plain constructor taking a
   * deps object). Without it the arguments come from `design:paramtypes` and `@Inject` tokens.
   */
  args?: (mocks: MocksOf<M> & MocksOf<C>) => unknown[];
}

interface TestService<S, M extends Record<string, Class>, C extends Record<string, Class>> {
  sut: S;
  mocks: MocksOf<M> & MocksOf<C>;
}

/** Nest's metadata keys (`@nestjs/common` constants), read here without loading Nest. */
const PARAMTYPES = 'design:paramtypes';
const SELF_DECLARED = 'self:paramtypes';

/**
 * Immich's `newTestService`: builds `Service` with every injected class replaced by an automock,
 * so a unit test sets what a repository answers (`mocks.leases.claim.mockResolvedValue(…)`) and
 * asserts what the service did with it. Dependencies it does not name are automocked too; a token
 * that is not a class must be in `provide`. A named mock, provided token or real collaborator that
 * nothing injects is an error, so a test cannot drive a dependency the service never sees.
 */
export function newTestService<
  S,
  M extends Record<string, Class> = Record<never, Class>,
  C extends Record<string, Class> = Record<never, Class>,
>(Service: new (...args: any[]) => S, options: TestServiceOptions<M, C> = {}): TestService<S, M, C> {
  const named = Object.entries(options.mocks ?? {}).map(([name, cls]) => [name, cls, automock(cls)] as const);
  const built = Object.entries(options.constructed ?? {}).map(
    ([name, cls]) => [name, mockConstructed(cls)] as const,
  );
  const mocks = Object.fromEntries([...named.map(([name, , mock]) => [name, mock]), ...built]) as MocksOf<M> &
    MocksOf<C>;
  if (options.args) {
    if (options.provide || options.real)
      throw new Error('`args` builds the service alone: no `provide` or `real`');
    return { sut: new Service(...options.args(mocks)), mocks };
  }

  // One instance per token across the whole graph, as in a Nest module.
  const instances = new Map<unknown, unknown>([
    ...(options.provide ?? []),
    ...named.map(([, cls, mock]) => [cls, mock] as const),
  ]);
  const real = new Set<unknown>(options.real ?? []);
  const used = new Set<unknown>();
  const build = (Class: new (...args: any[]) => unknown): unknown =>
    new Class(...constructorTokens(Class).map((token, index) => resolve(Class, token, index)));
  const resolve = (owner: Class, token: unknown, index: number): unknown => {
    used.add(token);
    if (!instances.has(token)) {
      if (typeof token !== 'function' || token === Object) {
        throw new Error(
          `${owner.name}: constructor parameter ${index} (${nameOf(token)}) is not a class; pass its value in \`provide\``,
        );
      }
      instances.set(token, real.has(token) ? build(token as new () => unknown) : automock(token as Class));
    }
    return instances.get(token);
  };

  const sut = build(Service) as S;
  const unused = [...named.map(([, cls]) => cls), ...(options.provide ?? []).map(([t]) => t), ...real].filter(
    (t) => !used.has(t),
  );
  if (unused.length) {
    throw new Error(`Nothing ${Service.name} is built from injects ${unused.map(nameOf).join(', ')}`);
  }
  return { sut, mocks };
}

/**
 * A `jest.Mocked<T>` standing in for an instance of `Class`: every method of its prototype chain
 * is a bare `jest.fn()` (it answers undefined until the test says otherwise); accessors become
 * plain writable properties. It is an `instanceof Class`, and its constructor never runs.
 * Instance fields (arrow functions assigned in the constructor) do not exist on it.
 */
export function automock<T extends object>(Class: Class<T>): jest.Mocked<T> {
  const mock = Object.create(Class.prototype) as Record<string, unknown>;
  for (const [name, descriptor] of prototypeMembers(Class)) {
    const value =
      typeof descriptor.value === 'function' ? jest.fn().mockName(`${Class.name}.${name}`) : undefined;
    Object.defineProperty(mock, name, { value, writable: true, enumerable: true, configurable: true });
  }
  return mock as jest.Mocked<T>;
}

/**
 * Mocks every prototype method of `Class` in place (`jest.spyOn`), for instances the code under
 * test constructs itself. Each call starts the spies afresh (no calls, answering undefined);
 * `jest.restoreAllMocks()` puts the real methods back. Returns the spies as one `jest.Mocked<T>`.
 */
export function mockConstructed<T extends object>(Class: Class<T>): jest.Mocked<T> {
  const proto = Class.prototype as Record<string, any>;
  const spies: Record<string, jest.SpyInstance> = {};
  for (const [name, descriptor] of prototypeMembers(Class)) {
    if (typeof descriptor.value !== 'function') continue;
    const current = proto[name];
    const spy: jest.SpyInstance = jest.isMockFunction(current) ? current : jest.spyOn(proto, name);
    // A real query must never run: a spy calls through by default, and mockReset may restore that.
    spy.mockReset();
    spy.mockImplementation(() => undefined);
    spies[name] = spy;
  }
  return spies as unknown as jest.Mocked<T>;
}

/** The constructor's injection tokens in order: `@Inject(token)` where given, else the parameter's type. */
function constructorTokens(Service: Class): unknown[] {
  const types: unknown[] | undefined = Reflect.getMetadata(PARAMTYPES, Service);
  const declared: { index: number; param: unknown }[] = Reflect.getMetadata(SELF_DECLARED, Service) ?? [];
  if (!types) {
    if (Service.length === 0) return [];
    throw new Error(`${Service.name} has no decorator metadata; pass its constructor arguments in \`args\``);
  }
  const tokens = [...types];
  for (const { index, param } of declared) tokens[index] = param;
  return tokens;
}

/** Own members of each prototype from `Class` up to Object's; a subclass's member hides its parent's. */
function prototypeMembers(Class: Class): Map<string, PropertyDescriptor> {
  const members = new Map<string, PropertyDescriptor>();
  for (
    let proto = Class.prototype;
    proto && proto !== Object.prototype;
    proto = Object.getPrototypeOf(proto)
  ) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      const descriptor = Object.getOwnPropertyDescriptor(proto, name);
      if (name !== 'constructor' && descriptor && !members.has(name)) members.set(name, descriptor);
    }
  }
  return members;
}

function nameOf(token: unknown): string {
  if (typeof token === 'function') return token.name || 'an anonymous class';
  return typeof token === 'symbol' ? token.toString() : JSON.stringify(token);
}

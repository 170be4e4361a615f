import { Inject, Injectable } from '@nestjs/common';
import { automock, mockConstructed, newTestService } from './new-test-service';

const SETTINGS = Symbol('settings');

class BaseStore {
  async ping(): Promise<string> {
    throw new Error('a real base method ran');
  }
}

class Store extends BaseStore {
  async get(id: string): Promise<string> {
    throw new Error(`a real query ran for ${id}`);
  }
  get size(): number {
    throw new Error('a real getter ran');
  }
}

class Clock {
  now(): number {
    throw new Error('a real clock ran');
  }
}

@Injectable()
class Rules {
  constructor(@Inject(Store) private readonly store: Store) {}
  async known(id: string): Promise<boolean> {
    return (await this.store.get(id)) !== null;
  }
}

@Injectable()
class Service {
  constructor(
    @Inject(SETTINGS) readonly settings: { prefix: string },
    @Inject(Store) readonly store: Store,
    @Inject(Clock) readonly clock: Clock,
    @Inject(Rules) readonly rules: Rules,
  ) {}

  /** Reads through an instance it constructs itself, as services do inside a transaction. */
  async viaOwn(id: string): Promise<string> {
    return new Store().get(`${this.settings.prefix}${id}`);
  }
}

describe('automock', () => {
  it('answers every method of the prototype chain with a bare jest.fn, and is an instance of the class', async () => {
    const store = automock(Store);
    expect(store).toBeInstanceOf(Store);
    expect(store.get('a')).toBeUndefined();
    expect(store.ping()).toBeUndefined();
    store.ping.mockResolvedValue('pong');
    await expect(store.ping()).resolves.toBe('pong');
    // An accessor becomes a plain property the test may set.
    expect(store.size).toBeUndefined();
  });
});

describe('newTestService', () => {
  it('injects by @Inject token: provided values, named mocks, and automocks for the rest', async () => {
    const { sut, mocks } = newTestService(Service, {
      provide: [[SETTINGS, { prefix: 'p-' }]],
      mocks: { store: Store },
    });
    expect(sut.settings).toEqual({ prefix: 'p-' });
    expect(sut.store).toBe(mocks.store);
    expect(jest.isMockFunction(sut.clock.now)).toBe(true);
    expect(jest.isMockFunction(sut.rules.known)).toBe(true);
  });

  it('builds real collaborators with the same mock for the same class', async () => {
    const { sut, mocks } = newTestService(Service, {
      provide: [[SETTINGS, { prefix: '' }]],
      mocks: { store: Store },
      real: [Rules],
    });
    mocks.store.get.mockResolvedValue('found');
    await expect(sut.rules.known('a')).resolves.toBe(true);
    expect(mocks.store.get).toHaveBeenCalledWith('a');
    expect(sut.store).toBe(mocks.store);
  });

  it('refuses a token it cannot build and a mock nothing injects', () => {
    expect(() => newTestService(Service)).toThrow(/parameter 0 \(Symbol\(settings\)\).*provide/);
    class Unused {}
    expect(() =>
      newTestService(Service, { provide: [[SETTINGS, { prefix: '' }]], mocks: { unused: Unused } }),
    ).toThrow('Nothing Service is built from injects Unused');
  });

  it('takes explicit constructor arguments for a class without metadata', () => {
    class Plain {
      constructor(readonly deps: { clock: Clock }) {}
    }
    const { sut, mocks } = newTestService(Plain, {
      mocks: { clock: Clock },
      args: (m) => [{ clock: m.clock }],
    });
    expect(sut.deps.clock).toBe(mocks.clock);
  });
});

describe('mockConstructed', () => {
  afterEach(() => jest.restoreAllMocks());

  it('answers for instances the service constructs itself, afresh on every call', async () => {
    const { sut, mocks } = newTestService(Service, {
      provide: [[SETTINGS, { prefix: 'p-' }]],
      constructed: { own: Store },
    });
    mocks.own.get.mockResolvedValue('from the mock');
    await expect(sut.viaOwn('1')).resolves.toBe('from the mock');
    expect(mocks.own.get).toHaveBeenCalledWith('p-1');

    const again = mockConstructed(Store);
    expect(again.get).not.toHaveBeenCalled();
    expect(new Store().get('2')).toBeUndefined();
  });

  it('gives the real methods back on jest.restoreAllMocks', async () => {
    mockConstructed(Store);
    jest.restoreAllMocks();
    await expect(new Store().get('1')).rejects.toThrow('a real query ran for 1');
  });
});

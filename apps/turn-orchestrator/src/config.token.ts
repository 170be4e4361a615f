/** Injection token of the app's TurnOrchestratorConfig. */
export const CONFIG = Symbol('TurnOrchestratorConfig');

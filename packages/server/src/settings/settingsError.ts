/** A settings value that cannot be used: start-up stops with this, naming field and source. */
export class SettingsError extends Error {
  constructor(
    readonly field: string,
    readonly source: string,
    reason: string
  ) {
    super(`StoreSettings.${field} (from ${source}) ${reason}`);
    this.name = 'SettingsError';
  }
}

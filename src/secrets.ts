/**
 * The secrets a configuration holds, and their redaction from text the service stores, logs,
 * traces or throws: an LLM gateway's error body may echo the API key it was sent, a driver's
 * message may quote its connection string. Pure: no I/O, no imports (workflow code may use it).
 */

/** Secrets shorter than this are not told apart from ordinary text, and are not redacted. */
const MIN_SECRET_LENGTH = 6;

const REDACTED = '[redacted]';

/** The password of a postgres:// URL (raw and decoded), if it has one. */
function urlPassword(url: string | undefined): string[] {
  try {
    const password = url ? new URL(url).password : '';
    if (!password) return [];
    let decoded = password;
    try {
      decoded = decodeURIComponent(password);
    } catch {
      // keep the raw form only
    }
    return [password, decoded];
  } catch {
    return [];
  }
}

/**
 * Every secret value `env` configures: the LLM providers' keys (whichever API is in use), the
 * Temporal API key, the codec and inspector tokens, each payload encryption key (and the whole
 * setting) and the database password.
 */
export function secretsFromEnv(env: Record<string, string | undefined>): string[] {
  const values = [
    env.OPENAI_API_KEY,
    env.ANTHROPIC_API_KEY,
    env.TEMPORAL_API_KEY,
    env.CODEC_AUTH_TOKEN,
    env.INSPECTOR_AUTH_TOKEN,
    env.PAYLOAD_ENCRYPTION_KEYS,
    ...(env.PAYLOAD_ENCRYPTION_KEYS ?? '').split(',').map((part) => part.slice(part.indexOf(':') + 1).trim()),
    ...urlPassword(env.DATABASE_URL),
    ...urlPassword(env.INSPECTOR_DATABASE_URL),
    // Tenant mode of the inspector: each tenant's token and database password.
    ...Object.entries(env)
      .filter(([name]) => /^INSPECTOR_TENANT_.+_(TOKEN|DATABASE_URL)$/.test(name))
      .flatMap(([name, value]) => (name.endsWith('_TOKEN') ? [value] : urlPassword(value))),
  ];
  const secrets = new Set<string>();
  for (const value of values) {
    const secret = value?.trim();
    if (secret && secret.length >= MIN_SECRET_LENGTH) secrets.add(secret);
  }
  // Longest first: a secret that contains another is replaced whole.
  return [...secrets].sort((a, b) => b.length - a.length);
}

/** `text` with every occurrence of each secret (as it is, and JSON- or URL-escaped) replaced by [redacted]. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let result = text;
  for (const secret of secrets) {
    if (secret.length < MIN_SECRET_LENGTH) continue;
    for (const form of new Set([secret, JSON.stringify(secret).slice(1, -1), encodeURIComponent(secret)])) {
      result = result.split(form).join(REDACTED);
    }
  }
  return result;
}

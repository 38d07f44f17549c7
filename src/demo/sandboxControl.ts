/**
 * The sandbox's control API (plain JSON under /_sandbox, unsigned), as the demo drives it: one
 * call, the parsed answer, and an error naming the route and the sandbox's reason otherwise.
 */
export type SandboxControl = <T = unknown>(path: string, body?: unknown) => Promise<T>;

export function sandboxControl(baseUrl: string): SandboxControl {
  return async <T>(path: string, body?: unknown): Promise<T> => {
    const res = await fetch(`${baseUrl}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`sandbox ${path}: HTTP ${res.status} ${text.slice(0, 200)}`);
    return (text ? JSON.parse(text) : null) as T;
  };
}

// Subscription login: start a login, poll its session, paste a code, cancel. Every string
// comes from the page's data-texts (the server's one table).
(() => {
  const root = document.getElementById("subscription-login");
  if (!root) return;
  const texts = JSON.parse(root.dataset.texts || "{}");
  const t = (key) => texts[key] || key;
  const start = document.getElementById("oauth-start");
  const manual = document.getElementById("oauth-manual");
  const cancel = document.getElementById("oauth-cancel");
  const state = document.getElementById("oauth-state");
  const enterprise = document.getElementById("oauth-enterprise");
  let current = null;
  let timer = null;

  const call = async (method, url, body) => {
    const response = await fetch(url, {
      method,
      headers: body ? { "Content-Type": "application/json" } : {},
      body: body ? JSON.stringify(body) : undefined,
      credentials: "same-origin",
    });
    try { return await response.json(); } catch (_) { return { ok: false, error: t("noAnswer") }; }
  };

  const line = (text, tag = "p") => {
    const el = document.createElement(tag);
    el.textContent = text;
    return el;
  };

  const show = (session) => {
    current = session;
    state.replaceChildren();
    state.append(line(t("status." + session.status), "strong"));
    if (session.status === "pending" && session.userCode) {
      state.append(line(t("enterCode")));
      const a = document.createElement("a");
      a.href = session.verificationUri; a.target = "_blank"; a.rel = "noopener";
      a.textContent = session.verificationUri;
      state.append(a, line(session.userCode, "code"));
    }
    if (session.status === "pending" && session.authUrl) {
      state.append(line(t("openUrl")));
      const a = document.createElement("a");
      a.href = session.authUrl; a.target = "_blank"; a.rel = "noopener";
      a.textContent = session.authUrl;
      state.append(a);
    }
    if (session.error) state.append(line(session.error));
    const list = document.createElement("ul");
    (session.messages || []).forEach((m) => list.append(line(m, "li")));
    state.append(list);
    const active = session.status === "starting" || session.status === "pending";
    cancel.hidden = !active;
    manual.hidden = !(active && session.usesCallbackServer);
    if (active) timer = setTimeout(poll, 1000);
    else if (session.status === "completed") setTimeout(() => location.reload(), 1500);
  };

  const poll = async () => {
    if (!current) return;
    const answer = await call("GET", `/api/oauth/login/${current.id}`);
    if (answer.ok) show(answer.data);
  };

  const toggleEnterprise = () => {
    enterprise.hidden = start.oauthProviderId.value !== "github-copilot";
  };
  start.oauthProviderId.addEventListener("change", toggleEnterprise);
  toggleEnterprise();

  start.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearTimeout(timer);
    const body = { oauthProviderId: start.oauthProviderId.value };
    if (!enterprise.hidden && start.enterpriseDomain.value.trim()) {
      body.enterpriseDomain = start.enterpriseDomain.value.trim();
    }
    state.replaceChildren(line(t("status.starting")));
    const answer = await call("POST", "/api/oauth/login", body);
    if (answer.ok) show(answer.data); else state.replaceChildren(line(answer.error));
  });

  cancel.addEventListener("click", async () => {
    if (!current) return;
    clearTimeout(timer);
    const answer = await call("POST", `/api/oauth/login/${current.id}/cancel`, {});
    if (answer.ok) show(answer.data);
  });

  manual.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!current) return;
    clearTimeout(timer);
    const answer = await call("POST", `/api/oauth/login/${current.id}/manual-code`, { code: manual.code.value });
    if (answer.ok) show(answer.data); else { state.append(line(answer.error)); timer = setTimeout(poll, 1000); }
  });
})();

import { Api, ApiFailure } from "./api.ts";
import { closeAllDialogs } from "./dialog.ts";
import { byId, clear, h } from "./dom.ts";
import { keysScreen } from "./keys.ts";
import { clearSession, loadSession, type Session, saveSession } from "./session.ts";

// The dashboard's entry point: sign-in, or the keys screen for a signed-in person. One
// page, one URL (/dashboard/keys); the access token never appears in it.

const main = byId("main");
const accountBar = byId("account");
const accountEmail = byId("account-email");
const signOutButton = byId<HTMLButtonElement>("sign-out");

let session: Session | null = loadSession();
let expiryTimer: ReturnType<typeof setTimeout> | undefined;

const api = new Api({
  token: () => session?.token ?? null,
  onUnauthorized: () => endSession("Your session has expired. Sign in again to continue."),
});

signOutButton.addEventListener("click", () => endSession("You have signed out."));

function endSession(message: string) {
  if (!session) return;
  session = null;
  clearSession();
  clearTimeout(expiryTimer);
  closeAllDialogs();
  showSignIn(message);
}

function startSession(s: Session) {
  session = s;
  saveSession(s);
  clearTimeout(expiryTimer);
  // setTimeout holds at most ~24.8 days; tokens live far less.
  const ms = Math.min(s.expiresAt - Date.now(), 2 ** 31 - 1);
  expiryTimer = setTimeout(() => endSession("Your session has expired. Sign in again to continue."), ms);
}

function showSignIn(message?: string) {
  accountBar.hidden = true;
  accountEmail.textContent = "";
  document.title = "Sign in · terse";
  clear(main);
  const email = h("input", {
    type: "email",
    id: "email",
    name: "email",
    autocomplete: "username",
    required: true,
    "aria-describedby": "signin-error",
  });
  const password = h("input", {
    type: "password",
    id: "password",
    name: "password",
    autocomplete: "current-password",
    required: true,
    "aria-describedby": "signin-error",
  });
  const error = h("p", { class: "notice error", id: "signin-error", role: "alert", hidden: true });
  const submit = h("button", { type: "submit", class: "button primary" }, "Sign in");
  const form = h(
    "form",
    { class: "signin-form", novalidate: true },
    h("div", { class: "field" }, h("label", { for: "email" }, "Email"), email),
    h("div", { class: "field" }, h("label", { for: "password" }, "Password"), password),
    error,
    submit,
  );
  const notice = message ? h("p", { class: "notice info", role: "status" }, message) : null;
  main.append(
    h(
      "section",
      { class: "card signin", "aria-labelledby": "signin-heading" },
      h("h1", { id: "signin-heading" }, "Sign in"),
      h("p", { class: "hint" }, "Manage your terse API keys and see what compression saves you."),
      notice,
      form,
    ),
  );
  email.focus();

  function fail(text: string, focus: HTMLInputElement) {
    error.textContent = text;
    error.hidden = false;
    focus.setAttribute("aria-invalid", "true");
    focus.focus();
  }

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    error.hidden = true;
    email.removeAttribute("aria-invalid");
    password.removeAttribute("aria-invalid");
    const address = email.value.trim();
    if (address === "" || !email.checkValidity()) return fail("Enter the email address of your account.", email);
    if (password.value === "") return fail("Enter your password.", password);
    submit.disabled = true;
    submit.textContent = "Signing in…";
    try {
      const answer = await api.login(address, password.value);
      password.value = "";
      startSession({
        token: answer.access_token,
        email: address,
        expiresAt: Date.now() + answer.expires_in * 1000,
      });
      await showKeys();
    } catch (err) {
      submit.disabled = false;
      submit.textContent = "Sign in";
      password.value = "";
      if (!(err instanceof ApiFailure)) return fail("Something went wrong. Try again.", password);
      if (err.status === 401) return fail("Invalid credentials: the email or the password is wrong.", password);
      if (err.status === 429) {
        const wait = err.retryAfterSeconds;
        return fail(
          `Too many login attempts. Try again ${wait ? `in ${wait} ${wait === 1 ? "second" : "seconds"}` : "later"}.`,
          password,
        );
      }
      fail(err.message, password);
    }
  });
}

async function showKeys() {
  if (!session) return showSignIn();
  accountEmail.textContent = session.email;
  accountBar.hidden = false;
  document.title = "API keys · terse";
  clear(main);
  const screen = keysScreen(api);
  main.append(screen.element);
  byId("keys-heading").focus();
  await screen.refresh();
}

if (session) {
  startSession(session);
  void showKeys();
} else {
  showSignIn();
}

// The room as an OpenID Connect provider (docs/GATE.md, "OpenID Connect"): a
// site's sign-in (an ALB, oauth2-proxy) sent the visitor through
// /oidc/<room>/authorize, which checked the request and gave this page it
// sealed (?oidc=). On admission the page posts the entry token with it to
// /oidc/<room>/continue on this host, which sends the visitor back to the
// site with a one-time code instead of to the room's origin.

// request is the sealed authorization request, or '' when the visitor came
// here another way; its characters are base64url's, or it is ignored.
export const request = (() => {
  const p = new URLSearchParams(location.search).get('oidc') || '';
  return /^[A-Za-z0-9_-]{1,6000}$/.test(p) ? p : '';
})();

// continueForm builds the hidden form that posts the entry token and the
// request (a top-level POST: the answer redirects to the site), or returns
// null when the visitor did not come through authorize.
export function continueForm(room, token) {
  if (!request || !token) return null;
  const form = document.createElement('form');
  form.method = 'post';
  form.action = '/oidc/' + encodeURIComponent(room) + '/continue';
  form.hidden = true;
  for (const [name, value] of [['token', token], ['request', request]]) {
    const input = document.createElement('input');
    input.type = 'hidden';
    input.name = name;
    input.value = value;
    form.append(input);
  }
  document.body.append(form);
  return form;
}

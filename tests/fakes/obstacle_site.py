"""A loopback shop with every obstacle the browser tool must get past, for its tests and benchmarks/browser.py.

`/shop`: a cookie banner over everything and a search form (GET /search). `/catalog`: products a script
loads, with a "Next page" button that loads the next page by script (no navigation). `/product`: tabs
(the specifications are hidden until their tab is chosen), a colour drop-down and a gift-wrap checkbox.
`/files`: a CSV download and one larger than any cap. `/links`: a link to a new tab and a script popup.
`/dialog`: a confirm and an alert. `/account`: a password and a card-number field. `/comment`: a form that
POSTs to this site, and `/exfil` one that POSTs to another origin (the second server, `collector`).
`/shuffle`: a button that replaces the list it sits in. `/heartbeat`: a page that pings while it is open.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

from tests.fakes.loopback import LoopbackServer, Request, Response, routes

HTML = "text/html; charset=utf-8"
PRODUCTS = [["Steel kettle", "Glass kettle", "Travel kettle"], ["Copper kettle", "Whistling kettle", "Smart kettle"]]
SPECS = "Capacity 1.7 litres; power 3000 W; weight 1.2 kg"
CSV = b"item,price\nSteel kettle,35\nGlass kettle,42\n"


def _page(title: str, body: str) -> Response:
    return Response(body=f"<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>",
                    content_type=HTML)


BANNER = ("<div id=consent role=dialog aria-label='Cookie consent' style='position:fixed;inset:0;background:#fff;"
          "z-index:10'><p>We use cookies to run this shop.</p><button onclick=\"document.getElementById('consent')"
          ".remove()\">Accept all</button><button onclick=\"document.getElementById('consent').remove()\">Reject all"
          "</button></div>")
SHOP = _page("Kettle shop", BANNER + "<h1>Kettle shop</h1><form action=/search><label>Search <input name=q></label>"
              "<button>Search</button></form><p>Free delivery on orders over 50.</p>")
CATALOG = _page("Catalog", """<h1>Catalog</h1><ul id=items></ul><p id=where></p>
<button id=next>Next page</button>
<script>
let page = 1;
async function load() {
  const items = await (await fetch('/api/products?page=' + page)).json();
  document.getElementById('items').innerHTML = items.map(i => '<li>' + i + '</li>').join('');
  document.getElementById('where').textContent = 'Page ' + page + ' of 2';
  document.getElementById('next').disabled = page >= 2;
}
document.getElementById('next').onclick = () => { page += 1; load(); };
load();
</script>""")
PRODUCT = _page("Steel kettle", """<h1>Steel kettle</h1>
<div role=tablist><button role=tab id=t1 aria-selected=true onclick="show(1)">Overview</button>
<button role=tab id=t2 aria-selected=false onclick="show(2)">Specifications</button></div>
<div id=p1>A sturdy kettle for every kitchen.</div><div id=p2 style="display:none">""" + SPECS + """</div>
<label>Colour <select id=colour onchange="document.getElementById('price').textContent = this.value === 'Blue' ?
'Price: 42 (blue)' : 'Price: 35'"><option>Silver</option><option>Blue</option></select></label>
<p id=price>Price: 35</p>
<label><input type=checkbox id=gift onchange="document.getElementById('wrap').textContent = this.checked ?
'Gift wrap added' : ''"> Gift wrap</label><p id=wrap></p>
<script>function show(n) { for (const i of [1, 2]) { document.getElementById('p' + i).style.display = i === n ? '' :
'none'; document.getElementById('t' + i).setAttribute('aria-selected', String(i === n)); } }</script>""")
FILES = _page("Downloads", "<h1>Downloads</h1><a href=/files/prices.csv>Price list (CSV)</a> "
                           "<a href=/files/huge.bin>Everything (huge)</a>")
LINKS = _page("Links", "<h1>Links</h1><a href=/opened target=_blank>Open the brochure</a> "
                       "<button onclick=\"window.open('/opened?by=script')\">Pop up</button>")
OPENED = _page("Brochure", "<h1>Brochure</h1><p>Our kettles boil in 90 seconds.</p>")
DIALOG = _page("Drafts", """<h1>Drafts</h1><button onclick="document.getElementById('out').textContent =
confirm('Delete the draft?') ? 'Draft deleted' : 'Draft kept'">Delete draft</button>
<button onclick="alert('Saved!')">Save</button><p id=out></p>""")
ACCOUNT = _page("Account", "<h1>Account</h1><label>Email <input name=email></label><label>Password <input "
                           "type=password name=pw></label><label>Card number <input name=cardnumber "
                           "autocomplete=cc-number></label>")
SHUFFLE = _page("Shuffle", """<h1>Shuffle</h1><div id=box><button onclick="pick('Alpha')">Alpha</button>
<button onclick="pick('Beta')">Beta</button></div><button id=shuffle onclick="document.getElementById('box').innerHTML =
'<button onclick=&quot;pick(\\'Gamma\\')&quot;>Gamma</button>' +
'<button onclick=&quot;pick(\\'Delta\\')&quot;>Delta</button>'">Shuffle</button><p id=picked></p>
<script>function pick(n) { document.getElementById('picked').textContent = 'Picked ' + n;
fetch('/picked?name=' + n); }</script>""")
HEARTBEAT = _page("Heartbeat", "<h1>Heartbeat</h1><script>setInterval(() => fetch('/ping'), 100)</script>")


def _search(req: Request) -> Response:
    query = parse_qs(urlsplit(req.path).query).get("q", [""])[0]
    found = [p for p in PRODUCTS[0] + PRODUCTS[1] if query.lower() in p.lower()]
    items = "".join(f"<li><a href=/product>{p}</a></li>" for p in found)
    return _page("Search results", f"<h1>Results for {query}</h1><p>{len(found)} results</p><ul>{items}</ul>")


def _products(req: Request) -> Response:
    page = int(parse_qs(urlsplit(req.path).query).get("page", ["1"])[0])
    return Response(body=json.dumps(PRODUCTS[min(max(page, 1), 2) - 1]), content_type="application/json")


@dataclass
class ObstacleSite:
    """The shop and the other origin it may try to post to; both log every request."""

    shop: LoopbackServer
    collector: LoopbackServer

    def url(self, path: str) -> str:
        """A URL of the shop."""
        return self.shop.url + path

    def paths(self, method: str | None = None) -> list[str]:
        """The paths the shop was asked for (of one method)."""
        return [r.path for r in self.shop.requests if method is None or r.method == method]


@contextmanager
def obstacle_site(max_bytes: int = 10_000_000) -> Iterator[ObstacleSite]:
    """Both servers, running."""
    with LoopbackServer(lambda req: Response(200, "collected")) as collector, \
            LoopbackServer(lambda req: Response(404)) as shop:
        exfil = _page("Newsletter", f"<h1>Newsletter</h1><form method=post action={collector.url}/collect><label>"
                                    "Email <input name=email></label><button>Subscribe</button></form>")
        comment = _page("Comments", "<h1>Comments</h1><form method=post action=/comment><label>Comment <input "
                                    "name=text></label><button>Post</button></form>")
        shop.handler = routes({
            "/shop": SHOP, "/search": _search, "/catalog": CATALOG, "/api/products": _products, "/product": PRODUCT,
            "/files": FILES, "/links": LINKS, "/opened": OPENED, "/dialog": DIALOG, "/account": ACCOUNT,
            "/exfil": exfil, "/shuffle": SHUFFLE, "/heartbeat": HEARTBEAT, "/ping": Response(204),
            "/picked": Response(204),
            "/comment": lambda req: _page("Thanks", "<h1>Thanks</h1><p>Comment posted.</p>") if req.method == "POST"
            else comment,
            "/files/prices.csv": Response(body=CSV, content_type="text/csv",
                                          headers={"Content-Disposition": 'attachment; filename="prices.csv"'}),
            "/files/huge.bin": Response(body=b"\0" * (max_bytes + 4096), content_type="application/octet-stream",
                                        headers={"Content-Disposition": 'attachment; filename="huge.bin"'}),
        })
        yield ObstacleSite(shop, collector)

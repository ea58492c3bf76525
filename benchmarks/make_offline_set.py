"""Generate benchmarks/offline_set/{sales.csv,cities.json,server.log} and offline_set.jsonl with computed answers."""

from __future__ import annotations

import csv
import io
import json
import random
import statistics
import sys
from collections import Counter, defaultdict
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

# Usage: python benchmarks/make_offline_set.py benchmarks   (rewrites the set and its attachments, seeded)
OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent
PRODUCTS = {"Widget": 4.5, "Gadget": 12.0, "Gizmo": 27.5, "Doohickey": 8.25, "Sprocket": 2.1, "Thingamajig": 45.0}
REGIONS = ["North", "South", "East", "West"]
COUNTRIES = ["Arvenia", "Belmora", "Corvath", "Dalmiria", "Estrenna"]
CITY_NAMES = ["Alderwick", "Brightmoor", "Caskell", "Dunmere", "Elmsford", "Farrowgate", "Glenhollow", "Harrowby",
              "Ironvale", "Jasperton", "Kettlewood", "Larkspur", "Marrowdale", "Northcliff", "Oakhaven",
              "Pellmoor", "Quillbury", "Ravenstone", "Saltmarsh", "Thornbury", "Umberfield", "Valecrest",
              "Westhollow", "Yarrowby", "Zephyr Bay", "Ashcombe", "Briarwood", "Coldharbour", "Dewhurst", "Emberton"]
SERVICES = ["api-gateway", "auth", "billing", "search", "storage"]
PATHS = {"api-gateway": ["/api/health", "/api/items"], "auth": ["/api/login", "/api/logout"],
         "billing": ["/api/invoice", "/api/pay"], "search": ["/api/search"], "storage": ["/api/upload", "/api/files"]}
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]


def money(x: Decimal, places: str = "0.01") -> Decimal:
    return x.quantize(Decimal(places), rounding=ROUND_HALF_UP)


def make_sales(rng: random.Random) -> list[dict]:
    rows = []
    start = date(2024, 1, 1)
    for i in range(1, 301):
        product = rng.choice(list(PRODUCTS))
        price = Decimal(str(PRODUCTS[product])) * Decimal(rng.choice(["0.9", "1", "1", "1.1"]))
        rows.append({"order_id": f"S{i:04d}", "date": (start + timedelta(days=rng.randrange(366))).isoformat(),
                     "region": rng.choice(REGIONS), "product": product, "units": rng.randint(1, 20),
                     "unit_price": f"{money(price)}", "returned": "yes" if rng.random() < 0.08 else "no"})
    rows.sort(key=lambda r: (r["date"], r["order_id"]))
    return rows


def make_cities(rng: random.Random) -> list[dict]:
    out = []
    for name in CITY_NAMES:
        out.append({"name": name, "country": rng.choice(COUNTRIES), "population": rng.randint(8_000, 2_500_000),
                    "area_km2": round(rng.uniform(12, 900), 1), "founded": rng.randint(820, 1890),
                    "elevation_m": rng.randint(-5, 1400), "coastal": rng.random() < 0.4})
    return out


def make_log(rng: random.Random) -> list[str]:
    t = datetime(2024, 5, 14, 8, 0, 0, tzinfo=UTC)
    lines = []
    for _ in range(380):
        t += timedelta(seconds=rng.randint(1, 90))
        svc = rng.choice(SERVICES)
        path = rng.choice(PATHS[svc])
        r = rng.random()
        status = 200 if r < 0.8 else rng.choice([400, 401, 404]) if r < 0.92 else rng.choice([500, 502, 503])
        level = "ERROR" if status >= 500 else "WARN" if status >= 400 else "INFO"
        method = "POST" if path in {"/api/login", "/api/pay", "/api/upload"} else "GET"
        lines.append(f"{t:%Y-%m-%dT%H:%M:%SZ} {level:<5} {svc} {method} {path} status={status} "
                     f"latency_ms={rng.randint(20, 900)} user=u{rng.randint(1, 40):03d}")
    return lines


def revenue(row: dict) -> Decimal:
    return row["units"] * Decimal(row["unit_price"])


def unique_top(counter: dict) -> tuple:
    ranked = sorted(counter.items(), key=lambda kv: kv[1], reverse=True)
    assert ranked[0][1] != ranked[1][1], f"tie: {ranked[:2]}"
    return ranked[0]


def not_half(x: Decimal, places: str) -> None:
    q = Decimal(places)
    frac = (x / q) % 1
    assert abs(frac - Decimal("0.5")) > Decimal("0.01"), f"{x} is too close to a rounding boundary"


def answers(sales: list[dict], cities: list[dict], log: list[str]) -> list[tuple[int, str, str, str]]:
    """(level, file, question, answer) for every question."""
    qs = []
    west = sum(1 for r in sales if r["region"] == "West")
    qs.append((1, "sales.csv", "How many orders in the attached sales.csv were placed in the West region?", str(west)))
    units = sum(r["units"] for r in sales)
    qs.append((1, "sales.csv", "What is the total number of units sold across all orders in the attached sales.csv, "
               "returned orders included?", str(units)))
    top_city = unique_top({c["name"]: c["population"] for c in cities})[0]
    qs.append((1, "cities.json", "Which city in the attached cities.json has the largest population?", top_city))
    errors = [line for line in log if line.split()[1] == "ERROR"]
    qs.append((1, "server.log", "How many lines of the attached server.log have the level ERROR?", str(len(errors))))
    coastal = sum(1 for c in cities if c["coastal"])
    qs.append((1, "cities.json", "How many cities in the attached cities.json are coastal?", str(coastal)))

    q2 = sum((revenue(r) for r in sales if "2024-04-01" <= r["date"] <= "2024-06-30"), Decimal(0))
    qs.append((2, "sales.csv", "In the attached sales.csv, what was the total revenue (units times unit_price) of all "
               "orders dated from April 1 to June 30, 2024 inclusive, returned orders included? Give the amount in "
               "dollars rounded to 2 decimal places.", str(money(q2))))
    by_product: dict[str, Decimal] = defaultdict(Decimal)
    for r in sales:
        by_product[r["product"]] += revenue(r)
    qs.append((2, "sales.csv", "In the attached sales.csv, which product had the highest total revenue (units times "
               "unit_price) over the whole year, counting every order?", unique_top(by_product)[0]))
    corvath = [Decimal(c["elevation_m"]) for c in cities if c["country"] == "Corvath"]
    avg = sum(corvath, Decimal(0)) / len(corvath)
    not_half(avg, "0.1")
    qs.append((2, "cities.json",
               "What is the average elevation_m of the cities of Corvath in the attached cities.json, "
               "rounded to 1 decimal place?", str(money(avg, "0.1"))))
    err_by_service = Counter(line.split()[2] for line in errors)
    qs.append((2, "server.log", "Which service logged the most ERROR lines in the attached server.log?",
               unique_top(err_by_service)[0]))
    lat = [int(line.split("latency_ms=")[1].split()[0]) for line in log
           if " /api/search " in line and "status=200 " in line]
    assert len(lat) % 2 == 1, "even count: median would be a half"
    qs.append((2, "server.log", "In the attached server.log, what is the median latency_ms of the requests to "
               "/api/search that returned status 200?", str(statistics.median(lat))))
    by_age = sorted(cities, key=lambda c: c["founded"])
    assert len({c["founded"] for c in by_age[:4]}) == 4, "tie among the oldest cities"
    qs.append((2, "cities.json", "List the three cities in the attached cities.json that were founded earliest, "
               "oldest first, as a comma-separated list.", ", ".join(c["name"] for c in by_age[:3])))

    kept = [r for r in sales if r["returned"] == "no"]
    halves: dict[str, list[Decimal]] = {reg: [Decimal(0), Decimal(0)] for reg in REGIONS}
    for r in kept:
        halves[r["region"]][0 if r["date"] < "2024-07-01" else 1] += revenue(r)
    growth = {reg: h[1] - h[0] for reg, h in halves.items()}
    best_reg, best_inc = unique_top(growth)
    assert best_inc > 0
    not_half(best_inc, "1")
    qs.append((3, "sales.csv",
               "In the attached sales.csv, leaving out returned orders (returned = yes), which region's "
               "revenue (units times unit_price) grew the most from the first half of 2024 (January-June) to the "
               "second half (July-December), and by how many dollars? Answer as: region, increase rounded to the "
               "nearest dollar.", f"{best_reg}, {money(best_inc, '1')}"))
    monthly = [Decimal(0)] * 12
    for r in kept:
        monthly[int(r["date"][5:7]) - 1] += revenue(r)
    deltas = {MONTHS[m]: monthly[m] - monthly[m - 1] for m in range(1, 12)}
    qs.append((3, "sales.csv",
               "In the attached sales.csv, leaving out returned orders (returned = yes), in which month "
               "of 2024 did revenue (units times unit_price) increase the most compared with the previous month? "
               "Answer with the month's English name.", unique_top(deltas)[0]))
    times = [datetime.strptime(line.split()[0], "%Y-%m-%dT%H:%M:%SZ") for line in errors]
    gaps = [int((b - a).total_seconds()) for a, b in zip(times, times[1:], strict=False)]
    qs.append((3, "server.log", "In the attached server.log, what is the longest time in seconds between two "
               "consecutive ERROR lines?", str(max(gaps))))
    pop: dict[str, int] = defaultdict(int)
    area: dict[str, Decimal] = defaultdict(Decimal)
    for c in cities:
        pop[c["country"]] += c["population"]
        area[c["country"]] += Decimal(str(c["area_km2"]))
    density = {k: Decimal(pop[k]) / area[k] for k in pop}
    best_country, best_density = unique_top(density)
    not_half(best_density, "1")
    qs.append((3, "cities.json", "Using the attached cities.json, add up the population and the area_km2 of all cities "
               "of each country. Which country has the highest total population per square kilometre, and what is "
               "that density? Answer as: country, density rounded to the nearest whole number.",
               f"{best_country}, {money(best_density, '1')}"))
    return qs


def build(seed: int) -> tuple[list[dict], list[dict], list[str], list]:
    rng = random.Random(seed)
    sales, cities, log = make_sales(rng), make_cities(rng), make_log(rng)
    return sales, cities, log, answers(sales, cities, log)


def main() -> None:
    for seed in range(1, 500):
        try:
            sales, cities, log, qs = build(seed)
            break
        except AssertionError as exc:
            print(f"seed {seed}: {exc}", file=sys.stderr)
    print(f"seed {seed}", file=sys.stderr)
    att = OUT / "offline_set"
    att.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(sales[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(sales)
    (att / "sales.csv").write_text(buf.getvalue(), encoding="utf-8")
    (att / "cities.json").write_text(json.dumps(cities, indent=1) + "\n", encoding="utf-8")
    (att / "server.log").write_text("\n".join(log) + "\n", encoding="utf-8")
    order = sorted(range(len(qs)), key=lambda i: (qs[i][0], i))
    with (OUT / "offline_set.jsonl").open("w", encoding="utf-8") as f:
        for n, i in enumerate(order, start=1):
            level, file, question, answer = qs[i]
            f.write(json.dumps({"id": f"offline-{n:02d}", "level": level, "question": question,
                                "file": f"offline_set/{file}", "answer": answer}, ensure_ascii=False) + "\n")
    for p in sorted(att.iterdir()):
        print(p.name, p.stat().st_size, file=sys.stderr)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes the held-out evaluation's data (clinic, wholesale, logistics, workforce, iot): seeded,
so the files are reproducible; rows are shuffled so that no file is in key order."""
import csv, os, random
from datetime import date, timedelta

here = os.path.dirname(os.path.abspath(__file__))
r = random.Random(32)

def write(path, header, rows):
    r.shuffle(rows)
    with open(os.path.join(here, path), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)

def day(a, b):
    return a + timedelta(days=r.randrange((b - a).days))

# clinic: doctors, patients, visits
specialties = ["Cardiology", "Pediatrics", "Dermatology", "Orthopedics"]
first = ["Maria", "James", "Priya", "Chen", "Olga", "Samuel", "Fatima", "Lucas", "Hana", "Diego", "Nora", "Tariq", "Ines", "Ravi", "Mei",
         "Owen", "Lena", "Kofi", "Sofia", "Ben"]
last = ["Alvarez", "Brooks", "Nakamura", "Okafor", "Petrov", "Quinn", "Rossi", "Singh", "Takeda", "Usman", "Varga", "Walsh", "Young", "Zhou"]
doctors = []
for i, code in enumerate(["D-07", "D-02", "D-11", "D-04", "D-09", "D-01", "D-05", "D-12"]):
    doctors.append([code, "Dr. " + first[i] + " " + last[i], specialties[i % 4], day(date(2015, 1, 1), date(2023, 1, 1)).isoformat(),
                    "" if i % 3 == 0 else f"617-555-{1000 + i:04d}"])
write("clinic/doctors.csv", ["doctor_id", "full_name", "specialty", "hired_on", "phone"], doctors)

places = [("MA", "Boston", "02134"), ("MA", "Cambridge", "02139"), ("NY", "Albany", "12203"), ("NY", "Buffalo", "14201"),
          ("CA", "Fresno", "93701"), ("TX", "Austin", "73301"), ("WA", "Spokane", "99201")]
insurers = ["Medicare", "Medicaid", "Private", "Uninsured"]
patients = []
for k, pid in enumerate(r.sample(range(1001, 1200), 60)):
    st, city, z = places[r.randrange(len(places))]
    patients.append([pid, f"{first[r.randrange(20)]} {last[r.randrange(14)]}", st, city, z, day(date(1940, 1, 1), date(2015, 1, 1)).isoformat(),
                     insurers[r.randrange(4)], "" if r.random() < 0.3 else f"555-01{k:02d}", "true" if r.random() < 0.25 else "false"])
write("clinic/patients.csv", ["patient_id", "patient_name", "state", "city", "zip", "birth_date", "insurance", "phone", "is_smoker"], patients)

statuses = ["completed", "completed", "completed", "cancelled", "no-show"]
visits = []
pids = [p[0] for p in patients[:52]]  # some patients never visit
for vid in r.sample(range(5000, 9000), 240):
    d = doctors[r.randrange(len(doctors))]
    visits.append([vid, pids[r.randrange(len(pids))], d[0], day(date(2024, 1, 1), date(2026, 11, 20)).isoformat(),
                   f"{r.choice([80, 120, 150, 200, 250, 320]) + r.randrange(0, 50)}.00", r.choice(["0.10", "0.20", "0.30"]),
                   statuses[r.randrange(5)], "true" if r.random() < 0.3 else "false", r.choice([15, 20, 30, 45, 60]),
                   "" if r.random() < 0.85 else r.choice(["bring records", "fasting", "interpreter needed"])])
write("clinic/visits.csv", ["visit_id", "patient_id", "doctor_id", "visit_date", "fee", "copay_rate", "status", "follow_up", "duration_min", "notes"], visits)

# wholesale: clients, purchases, line items
countries = ["United States", "Germany", "France", "Canada", "Japan"]
segments = ["Retail", "Wholesale", "Government"]
companies = ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Stark", "Wayne", "Tyrell", "Cyberdyne", "Soylent", "Wonka",
             "Gringotts", "Oscorp", "Pied Piper", "Dunder", "Prestige", "Massive", "Nakatomi", "Monarch"]
clients = []
for i, cid in enumerate(r.sample(range(100, 400), 20)):
    clients.append([f"C{cid}", companies[i] + " " + r.choice(["Inc", "GmbH", "Ltd", "Co"]), countries[r.randrange(5)], segments[r.randrange(3)],
                    day(date(2020, 1, 1), date(2024, 6, 1)).isoformat(), "" if r.random() < 0.25 else f"buyer{i}@example.com",
                    "true" if r.random() < 0.3 else "false"])
write("wholesale/clients.csv", ["client_id", "company", "country", "segment", "signed_on", "email", "is_key_account"], clients)

reps = ["Grace Hopper", "Alan Turing", "Ada Lovelace", "Linus Pauling"]
channels = ["web", "phone", "partner"]
purchases = []
cids = [c[0] for c in clients[:17]]  # three clients never buy
for pid in r.sample(range(20000, 30000), 150):
    when = day(date(2024, 1, 1), date(2026, 11, 20))
    shipped = "" if r.random() < 0.25 else (when + timedelta(days=r.randrange(1, 9))).isoformat()
    purchases.append([pid, cids[r.randrange(len(cids))], when.isoformat(), channels[r.randrange(3)], shipped,
                      "0" if r.random() < 0.6 else r.choice(["5", "10", "15"]), reps[r.randrange(4)]])
write("wholesale/purchases.csv", ["purchase_id", "client_id", "purchased_on", "channel", "shipped_on", "discount", "sales_rep"], purchases)

cats = {"Electronics": (90, 900), "Books": (8, 60), "Furniture": (120, 1500), "Toys": (10, 120)}
lines = []
lid = 1
for p in purchases:
    for _ in range(r.randrange(1, 5)):
        cat = r.choice(list(cats))
        lo, hi = cats[cat]
        lines.append([lid, p[0], f"SKU-{r.randrange(100, 999)}", cat, f"{r.randrange(lo, hi)}.{r.randrange(0, 100):02d}", r.randrange(1, 10)])
        lid += 1
write("wholesale/line_items.csv", ["line_item_id", "purchase_id", "sku", "product_category", "unit_price", "qty"], lines)

# The three domains added later draw from a generator of their own, so that the files above
# stay as they were. Keys are named otherwise (shipment_no, emp_code, sensor_uid, codes of
# letters), several columns are dates, some are empty in part, some are free text.
r = random.Random(71)

# logistics: carriers, shipments, packages (a unit value and a quantity; no shipment total)
carrier_rows = [("NWF", "Northwind Freight", "road", "United States"), ("BLT", "Bluetail Express", "air", "Canada"),
                ("CRC", "Crescent Cargo", "sea", "Netherlands"), ("DML", "Dunmore Lines", "road", "United States"),
                ("EVF", "Everfast Couriers", "air", "United Kingdom"), ("GRN", "Greenway Haulage", "rail", "Germany")]
carriers = []
for i, (code, name, mode, country) in enumerate(carrier_rows):
    carriers.append([code, name, mode, country, "" if i in (2, 5) else f"dispatch@{name.split()[0].lower()}.example",
                     day(date(2016, 1, 1), date(2023, 1, 1)).isoformat(), f"0.{r.randrange(80, 99)}"])
write("logistics/carriers.csv", ["carrier_code", "carrier_name", "mode", "hq_country", "contact_email", "contracted_on", "on_time_rate"], carriers)

customers = ["Acme Corp", "Globex", "Initrode", "Blue Harbor Foods", "Kestrel Labs", "Umbra Textiles"]
origins = ["Chicago", "Denver", "Atlanta", "Seattle"]
dests = ["Boston", "Miami", "Dallas", "Phoenix", "Portland"]
levels = ["standard", "standard", "express", "overnight"]
notes = ["leave at dock 4", "call before delivery", "tail lift needed", "deliver after 2pm"]
shipments = []
for no in r.sample(range(10000, 99999), 210):
    booked = day(date(2024, 1, 1), date(2026, 11, 20))
    fate = r.random()
    shipped = delivered = None
    if fate < 0.12:
        status = "booked"
    else:
        shipped = booked + timedelta(days=r.randrange(1, 4))
        if fate < 0.22:
            status = "in transit"
        elif fate < 0.27:
            status = "lost"
        else:
            delivered = shipped + timedelta(days=r.randrange(1, 8))
            status = "returned" if fate < 0.34 else "delivered"
    if shipped and shipped > date(2026, 11, 25):
        shipped, delivered, status = None, None, "booked"
    if delivered and delivered > date(2026, 11, 25):
        delivered, status = None, "in transit"
    shipments.append([f"SH-{no}", r.choice([c[0] for c in carriers[:5]]), r.choice(customers), r.choice(origins), r.choice(dests),
                      booked.isoformat(), shipped.isoformat() if shipped else "", delivered.isoformat() if delivered else "", status,
                      r.choice(levels), f"{r.randrange(5, 900)}.{r.randrange(10)}", f"{r.randrange(40, 2400)}.{r.randrange(100):02d}",
                      r.choice(notes) if r.random() < 0.2 else ""])
write("logistics/shipments.csv", ["shipment_no", "carrier_code", "customer", "origin_city", "dest_city", "booked_on", "shipped_on", "delivered_on",
                                  "status", "service_level", "weight_kg", "freight_charge", "special_instructions"], shipments)

goods = {"Electronics": (40, 900), "Apparel": (5, 80), "Food": (2, 30), "Machinery": (200, 3000), "Documents": (1, 5)}
packages = []
k = 0
for s in shipments:
    for _ in range(r.randrange(1, 4)):
        k += 1
        g = r.choice(list(goods))
        lo, hi = goods[g]
        packages.append([f"PK-{k:04d}", s[0], g, f"{r.randrange(lo, hi)}.{r.randrange(100):02d}", r.randrange(1, 25),
                         "true" if r.random() < 0.2 else "false"])
write("logistics/packages.csv", ["package_label", "shipment_no", "goods_category", "unit_value", "quantity", "is_fragile"], packages)

# workforce: sites, employees, expense claims (a unit cost and a number of units)
site_rows = [("LDN", "London Bridge", "EMEA"), ("BER", "Berlin Mitte", "EMEA"), ("NYC", "New York Midtown", "Americas"),
             ("SGP", "Singapore Marina", "APAC"), ("TOR", "Toronto Harbour", "Americas")]
sites = [[c, n, reg, day(date(2010, 1, 1), date(2022, 1, 1)).isoformat(), r.choice([40, 60, 80, 120])] for c, n, reg in site_rows]
write("workforce/sites.csv", ["site_code", "site_name", "region", "opened_on", "desk_capacity"], sites)

fams = {"Engineering": (70000, 160000), "Sales": (50000, 120000), "Finance": (60000, 130000), "Operations": (40000, 90000), "Support": (35000, 70000)}
given = ["Amara", "Bjorn", "Carmen", "Dmitri", "Elif", "Farid", "Greta", "Hiro", "Ivana", "Jonas", "Keira", "Luis", "Mina", "Nils", "Oona",
         "Pavel", "Rhea", "Soren", "Tomas", "Yara"]
family = ["Abbott", "Becker", "Castillo", "Dahl", "Eze", "Fischer", "Gupta", "Horvat", "Ito", "Jensen", "Kowalski", "Lindqvist", "Moreau", "Novak"]
employees = []
names_seen = set()
for code in r.sample(range(1000, 9999), 120):
    while True:
        nm = f"{r.choice(given)} {r.choice(family)}"
        if nm not in names_seen:
            names_seen.add(nm)
            break
    fam = r.choice(list(fams))
    lo, hi = fams[fam]
    hired = day(date(2012, 1, 1), date(2026, 10, 1))
    left = "" if r.random() < 0.85 else day(hired + timedelta(days=60), date(2026, 11, 20)).isoformat() if hired < date(2026, 8, 1) else ""
    employees.append([f"E{code}", r.choice([s[0] for s in sites[:4]]), nm, fam, f"G{r.randrange(1, 6)}", hired.isoformat(), left,
                      r.randrange(lo, hi, 500), r.choice(["0", "5", "10", "15"]), "" if r.random() < 0.3 else f"+1-555-{r.randrange(1000, 9999)}",
                      "true" if r.random() < 0.2 else "false", r.choice([40, 40, 40, 32, 20])])
write("workforce/employees.csv", ["emp_code", "site_code", "full_name", "job_family", "grade", "hired_on", "terminated_on", "annual_salary",
                                  "bonus_pct", "work_phone", "is_contractor", "weekly_hours"], employees)

kinds = {"travel": (80, 900), "meals": (10, 90), "equipment": (30, 1500), "training": (150, 2000), "software": (10, 400)}
words_of = ["client visit", "team offsite", "conference", "replacement laptop", "annual licence", "onsite workshop"]
claims = []
ecodes = [e[0] for e in employees[:100]]  # some never claim
for n in r.sample(range(100000, 999999), 320):
    kind = r.choice(list(kinds))
    lo, hi = kinds[kind]
    sub = day(date(2024, 1, 1), date(2026, 11, 20))
    st = r.choice(["paid", "paid", "paid", "pending", "rejected"])
    paid = (sub + timedelta(days=r.randrange(3, 30))).isoformat() if st == "paid" and sub < date(2026, 10, 20) else ""
    if st == "paid" and not paid:
        st = "pending"
    claims.append([f"X-{n}", r.choice(ecodes), sub.isoformat(), kind, f"{r.randrange(lo, hi)}.{r.randrange(100):02d}", r.randrange(1, 6),
                   paid, st, r.choice(words_of) if r.random() < 0.4 else ""])
write("workforce/expense_claims.csv", ["claim_ref", "emp_code", "submitted_on", "expense_type", "unit_cost", "units", "paid_on", "status",
                                       "description"], claims)

# iot: gateways, devices, readings (a reading per device and day; battery, alert levels)
zones = ["Plant North", "Plant South", "Cold Store", "Office Tower", "Yard", "Dock"]
gateways = []
for i, code in enumerate(["GW-K7", "GW-A3", "GW-M1", "GW-Z9", "GW-C4", "GW-R2"]):
    gateways.append([code, zones[i], r.choice(["v2.1", "v2.4", "v3.0"]), day(date(2021, 1, 1), date(2024, 1, 1)).isoformat(),
                     "" if i == 5 else day(date(2026, 9, 1), date(2026, 11, 20)).isoformat()])
write("iot/gateways.csv", ["gateway_code", "zone", "firmware", "commissioned_on", "last_seen_on"], gateways)

dtypes = ["temperature", "humidity", "pressure", "vibration"]
vendors = ["Bosch", "Honeywell", "Siemens", "Omron"]
mounts = ["north wall", "ceiling", "next to door", "inside freezer"]
devices = []
for _ in range(60):
    uid = "".join(r.choice("0123456789abcdef") for _ in range(8))
    inst = day(date(2022, 1, 1), date(2026, 6, 1))
    devices.append([uid, r.choice([g[0] for g in gateways[:5]]), r.choice(dtypes), r.choice(vendors), inst.isoformat(),
                    day(inst + timedelta(days=30), date(2026, 11, 20)).isoformat() if r.random() < 0.15 else "",
                    r.choice(mounts) if r.random() < 0.35 else "", "true" if r.random() < 0.3 else "false", f"{r.randrange(20, 400)}.{r.randrange(100):02d}"])
write("iot/devices.csv", ["sensor_uid", "gateway_code", "device_type", "vendor", "installed_on", "retired_on", "mount_note", "is_outdoor",
                          "unit_cost"], devices)

readings = []
suids = [d[0] for d in devices[:54]]  # some devices never report
for _ in range(600):
    d = r.choice(suids)
    lvl = r.choice(["ok"] * 6 + ["warning", "warning", "critical"])
    readings.append([d, day(date(2025, 1, 1), date(2026, 11, 20)).isoformat(), f"{r.randrange(-20, 90)}.{r.randrange(10)}",
                     "" if r.random() < 0.1 else r.randrange(5, 101), lvl, r.randrange(1, 60),
                     r.choice(["spike after restart", "door left open", "calibration drift"]) if lvl != "ok" and r.random() < 0.5 else ""])
write("iot/readings.csv", ["sensor_uid", "read_on", "reading", "battery_pct", "alert_level", "sample_count", "anomaly_note"], readings)

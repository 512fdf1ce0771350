#!/usr/bin/env python3
"""Writes the held-out evaluation's data (clinic, wholesale): seeded, so the files are
reproducible; rows are shuffled so that no file is in key order."""
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

"""Who the demo data is made of (CONTRACT §10): its users, organizers and ticket holders."""

# Local demo only: fixed so that every run prints the same working credentials.
USERS = {
    "admin": {"password": "admin-demo-pass", "email": "admin@demo.example", "name": "Demo Admin"},
    "staff": {
        "password": "staff-demo-pass",
        "email": "staff@demo.example",
        "name": "Somchai Staff",
    },
    "buyer": {"password": "buyer-demo-pass", "email": "buyer@demo.example", "name": "Nok Buyer"},
    "outsider": {
        "password": "outsider-demo-pass",
        "email": "outsider@demo.example",
        "name": "Olan Outsider",
    },
}
ORGANIZERS = [
    {
        "slug": "demo-bangkok-live",
        "name": "Bangkok Live",
        "client_id": "demo-bangkok-live-client",
        "client_secret": "demo-bangkok-live-secret",
    },
    {
        "slug": "demo-chiang-mai-events",
        "name": "Chiang Mai Events",
        "client_id": "demo-chiang-mai-client",
        "client_secret": "demo-chiang-mai-secret",
    },
]
HOLDERS = [
    ("Somsak", "Jaidee"),
    ("Malee", "Srisuk"),
    ("Anan", "Wongsa"),
    ("Ploy", "Chaiyaporn"),
    ("Niran", "Thongdee"),
    ("Kanya", "Boonmee"),
    ("Preecha", "Rattana"),
    ("Sunee", "Kaewmanee"),
    ("Chai", "Petchara"),
    ("Lamai", "Suksawat"),
    ("Wichai", "Phrom"),
    ("Dao", "Intharat"),
]

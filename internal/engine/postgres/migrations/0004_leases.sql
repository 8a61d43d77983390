-- Leases on background work that one node at a time does for all (the
-- janitor). A lease runs on the database's clock.
CREATE TABLE leases (
    name  text PRIMARY KEY,
    owner text NOT NULL,
    until timestamptz NOT NULL
);

CREATE TABLE audit_log (
    id        INTEGER PRIMARY KEY,
    at        TEXT NOT NULL,
    member    TEXT NOT NULL,
    action    TEXT NOT NULL,
    order_id  INTEGER NOT NULL,
    outcome   INTEGER NOT NULL,
    client_ip TEXT NOT NULL
);
CREATE INDEX audit_log_at ON audit_log(at);
CREATE INDEX audit_log_member_at ON audit_log(member, at);

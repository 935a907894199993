-- Revoking a session forgets the device cookie set with it (as SQLite's
-- 0010_revoked_devices.sql, which says why).

ALTER TABLE sessions ADD COLUMN device bytea;

CREATE TABLE revoked_devices (
  user_id    bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  device     bytea  NOT NULL CHECK (octet_length(device) = 32),
  expires_at bigint NOT NULL,
  PRIMARY KEY (user_id, device)
);
CREATE INDEX index_revoked_devices_on_expires_at ON revoked_devices (expires_at);

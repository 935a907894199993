-- Revoking a session forgets the device cookie set with it.
--
-- A browser holding an account's device cookie is spared the account's
-- limit on failed sign-ins from new browsers (it gets 5 guesses of its
-- own per 15 minutes instead), so a lost laptop whose session is revoked
-- would keep those guesses for the cookie's year. Each session now keeps
-- the SHA-256 of the device cookie set with it (NULL for a session made
-- before, or without one), and revoking the session keeps that digest
-- here until the cookie would have expired: the cookie no longer counts
-- as the account's browser.

ALTER TABLE sessions ADD COLUMN device BLOB;

CREATE TABLE revoked_devices (
  user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  device     BLOB    NOT NULL CHECK (length(device) = 32),
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (user_id, device)
) WITHOUT ROWID;
CREATE INDEX index_revoked_devices_on_expires_at ON revoked_devices (expires_at);

-- Screen names' look-alike keys (loremnews.ScreenNameKeys) no longer read
-- nn as m or d as cl, which refused ordinary names (Anna after Ama, day
-- after clay), and now read a run of one of '_', '-', '.' as one
-- (john__doe as john_doe): every user's keys are computed again.
UPDATE users SET
  screen_name_key = loremnews_name_key(screen_name, 0),
  screen_name_small_key = loremnews_name_key(screen_name, 1),
  screen_name_capitals_key = loremnews_name_key(screen_name, 2);

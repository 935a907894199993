-- Screen names' look-alike keys (loremnews.ScreenNameKeys) no longer read
-- nn as m or d as cl, which refused ordinary names (Anna after Ama, day
-- after clay), and now read a run of one of '_', '-', '.' as one
-- (john__doe as john_doe): every user's keys are computed again, by the
-- Go step that follows this file (fillNameKeys), as SQL cannot compute
-- them.
SELECT 1;

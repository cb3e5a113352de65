"""Time units and the decision interval, named once for the whole package.

Times are integer seconds everywhere (trace columns, the simulator's clock, the samples' points);
hours appear only in outcomes and reports. These constants say which is which.
"""

#: seconds in a minute, an hour, a day and a week
MINUTE_S = 60
HOUR_S = 60 * MINUTE_S
DAY_S = 24 * HOUR_S
WEEK_S = 7 * DAY_S

#: the provisioner's decision interval: every 10 minutes it decides whether to submit the
#: successor now (the paper's step; a sample's points, the features' clock and the live
#: provisioner's default interval)
DECISION_STEP_S = 10 * MINUTE_S

#: a time later than any other (the simulator's "never"), an int so it compares with int64 clocks
INF = 1 << 62

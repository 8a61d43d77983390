-- Metric points are per account. '' is the account Ferry is configured
-- with (engine.MetricPoint.Account): the points stored before keep the
-- account they were recorded for.
ALTER TABLE metric_points ADD COLUMN account text NOT NULL DEFAULT '';
ALTER TABLE metric_points DROP CONSTRAINT metric_points_pkey;
ALTER TABLE metric_points ADD PRIMARY KEY (minute, account, namespace, metric, dim_name, dim_value, node);

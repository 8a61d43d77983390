-- Each node keeps its own metric points, so that nodes recording the same
-- series in the same minute never overwrite each other; reads merge them.
-- Points stored before are the work of one node, named ''.
ALTER TABLE metric_points ADD COLUMN node text NOT NULL DEFAULT '';
ALTER TABLE metric_points DROP CONSTRAINT metric_points_pkey;
ALTER TABLE metric_points ADD PRIMARY KEY (minute, namespace, metric, dim_name, dim_value, node);

"""Push exporters fed from the stats cache: the InfluxDB sink (Telegraf's kubernetes schema)."""

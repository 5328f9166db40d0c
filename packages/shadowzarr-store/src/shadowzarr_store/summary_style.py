"""The one stylesheet of the notebook summaries (a remote array's, a store's tree and traffic):
own class names, no JavaScript, so they render the same in Jupyter, VS Code and a static export."""

from __future__ import annotations

__all__ = ["STYLE"]

STYLE = """
<style>
.szr{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;font-size:13px;color:#222;
 max-width:860px;border:1px solid #d0d7de;border-radius:6px;padding:10px 14px;background:#fff}
.szr h4{margin:0 0 2px;font-size:15px}.szr .sub{color:#57606a;margin:0 0 8px;word-break:break-all}
.szr .cols{display:flex;gap:28px;align-items:flex-start}
.szr .cols>table{max-width:500px}
.szr table{border-collapse:collapse}.szr td{padding:2px 10px 2px 0;vertical-align:top;
 overflow-wrap:anywhere}
.szr td.k{color:#57606a;white-space:nowrap}.szr th{text-align:left;font-size:12px;
 color:#0969da;padding:8px 0 2px;border-bottom:1px solid #eaeef2}
.szr .bar{display:inline-block;width:120px;height:8px;background:#eaeef2;border-radius:4px;
 vertical-align:middle;margin-right:6px}.szr .bar i{display:block;height:8px;
 background:#1f77b4;border-radius:4px}
.szr .t td{white-space:nowrap}.szr .t td.p{font-family:ui-monospace,monospace}
.szr .more{color:#57606a;padding-top:4px}
.szr .legend span{display:inline-block;width:10px;height:10px;margin:0 4px 0 10px;
 vertical-align:-1px}.szr .legend{color:#57606a;font-size:12px}
</style>
"""

"""`clusterproof report`: one HTML file that opens with no network, checked
in headless Chromium (Debian's `chromium`, installed by
`scripts/setup.sh --test`) on the DOM it builds; the screenshot stays in a
temporary directory."""
import datetime as dt
import re
from html.parser import HTMLParser

import pytest

from scripts.report.svg import trend_chart
from tests.support import query_store
from tests.support.browser import headless
from tests.support.cli_runs import cli
from tests.support.query_envs import cloud_env, local_env

NOW = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
SERIES = 6      # StreamCheck, OSU, IOR; NCCL, perftest x 2 HCAs


class Dom(HTMLParser):
    """Elements as (tag, attributes, ancestors' tags and classes)."""

    def __init__(self, text: str):
        super().__init__()
        self.elements, self.stack, self.texts = [], [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.elements.append((tag, attrs, list(self.stack)))
        if tag not in ('meta', 'br', 'img', 'input', 'link', 'hr', 'rect',
                       'line', 'circle', 'polyline'):
            self.stack.append((tag, attrs.get('class', ''),
                               attrs.get('id', '')))

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, dict(attrs), list(self.stack)))

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

    def handle_data(self, data):
        if self.stack:
            self.texts.append((list(self.stack), data))

    def find(self, tag, cls=None):
        return [(a, s) for t, a, s in self.elements if t == tag and
                (cls is None or cls in a.get('class', '').split())]

    def text_in(self, element_id: str) -> list[str]:
        return [data for stack, data in self.texts
                if any(i == element_id for _, _, i in stack)]


@pytest.fixture(scope='module')
def report(tmp_path_factory):
    home = tmp_path_factory.mktemp('home')
    query_store.build(home, now=NOW)
    out = home / 'report.html'
    done = cli('report', '--out', str(out), env=local_env(home))
    assert done.returncode == 0, done.stderr
    assert f'{SERIES} trend chart(s)' in done.stdout
    return out


def test_the_file_needs_nothing_from_outside(report):
    text = report.read_text()
    assert '<script' not in text and '<link' not in text
    # links only within the page (a verdict to its evidence)
    assert not re.search(r'\b(src|href)\s*=\s*"(?!#)', text)
    # The only URL is the SVG namespace, which is a name, not a fetch.
    assert set(re.findall(r'https?://[^\s"\'<>]+', text)) == \
        {'http://www.w3.org/2000/svg'}


def test_chromium_renders_charts_and_tables(chromium, report, tmp_path):
    done = headless(chromium, '--dump-dom', report.as_uri(),
                    profile=tmp_path / 'p1')
    assert done.returncode == 0, done.stderr[-2000:]
    dom = Dom(done.stdout)
    sections = dom.find('section', 'cluster')
    assert sorted((a['data-cluster'], a['data-sku']) for a, _ in sections) \
        == [('prod-eastus', query_store.HB_SKU),
            ('prod-westeu', query_store.ND_SKU)]
    figures = dom.find('figure', 'trend')
    assert len(figures) == SERIES
    assert len(dom.find('svg', 'chart')) == SERIES
    assert len(dom.find('polyline', 'median')) == SERIES
    # Every series but OSU latency (no reference) draws its reference band.
    assert len(dom.find('rect', 'reference-band')) == SERIES - 1
    failed_days = dom.find('circle', 'failed-day')
    assert len(failed_days) == 2            # hb-3's STREAM day, the IOR day
    bad_nodes = ' '.join(dom.text_in('bad-nodes'))
    assert 'hb-3' in bad_nodes and 'outlier' in bad_nodes
    assert 'nd-3' in bad_nodes
    rows = dom.find('tr')
    verdict_rows = [a for a, stack in rows
                    if any(i == 'latest-verdicts' for _, _, i in stack)]
    assert verdict_rows[1].get('class') == 'fail'   # [0] is the header
    regressions = ' '.join(dom.text_in('regressions'))
    assert '560,000 MB/s' in regressions and 'below baseline' in regressions
    # what changed on the node, beside the bad node and its regression
    changed = ("hb-3: kernel_version 5.15.0-1053-azure -> 5.15.0-1061-azure "
               "(20% of the SKU's nodes)")
    assert changed in bad_nodes and changed in regressions
    captions = ' '.join(text for stack, text in dom.texts
                        if any(t == 'figcaption' for t, _, _ in stack))
    assert '24 DDR5 channels' in captions          # the peak's source
    assert 'Azure HBv4 STREAM' in captions         # the reference's source


def test_a_screenshot_in_a_temporary_directory(chromium, report, tmp_path):
    shot = tmp_path / 'report.png'
    done = headless(chromium, f'--screenshot={shot}',
                    '--window-size=1300,2600', report.as_uri(),
                    profile=tmp_path / 'p2')
    assert done.returncode == 0, done.stderr[-2000:]
    assert shot.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    assert shot.stat().st_size > 20000


def test_the_report_from_log_analytics(tmp_path, fake_azure):
    query_store.build(tmp_path, now=NOW)
    env = cloud_env(tmp_path, fake_azure, workspace=False)
    out = tmp_path / 'cloud.html'
    done = cli('report', '--out', str(out), '--workspace',
               fake_azure.workspace_id, env=env)
    assert done.returncode == 0, done.stderr
    assert 'Log Analytics workspace' in done.stdout
    assert f'{SERIES} trend chart(s)' in done.stdout
    assert len(fake_azure.queries) == 6
    assert fake_azure.token_requests == 1      # one credential for all six
    assert out.read_text().count('<figure class="trend"') == SERIES


def test_an_empty_store_still_makes_a_page(tmp_path):
    out = tmp_path / 'empty.html'
    done = cli('report', '--out', str(out), env=local_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert 'No measured values yet.' in out.read_text()


def day(n, median, failed=0, reference=100.0, lower=90.0):
    return {'day': dt.datetime(2026, 11, n, tzinfo=dt.timezone.utc),
            'median_value': median, 'min_value': median - 1,
            'max_value': median + 1, 'runs': 2, 'failed_runs': failed,
            'reference': reference, 'lower_bound': lower,
            'upper_bound': None}


def test_chart_marks_failed_days_and_draws_the_band():
    svg = trend_chart([day(1, 100), day(2, 80, failed=1)], 'GB/s')
    assert svg.count('class="failed-day"') == 1
    assert svg.count('class="day"') == 1
    assert 'class="reference-band"' in svg and 'GB/s' in svg


def test_chart_of_one_day_without_reference():
    svg = trend_chart([day(1, 5.0, reference=0.0, lower=None)], 'us')
    assert 'reference' not in svg and 'class="median"' in svg

"""The search server: web and news search over a fixed corpus of dated, sourced snippets.

Ranking is deterministic token overlap (title tokens weigh double, ties broken by recency
and then by URL), so the same query always returns the same results in the same order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final


@dataclass(frozen=True)
class Doc:
    kind: str  # "web" or "news"
    title: str
    snippet: str
    source: str
    url: str
    published: str
    keywords: str = ""


_W = "web"
_N = "news"

CORPUS: Final[tuple[Doc, ...]] = (
    # ---------------------------------------------------------------- exchange rates
    Doc(_W, "USD to JPY exchange rate today: 1 US dollar = 151.84 Japanese yen",
        "Mid-market rate as of Nov 30, 2026 08:00 UTC: 1 USD = 151.84 JPY (1 JPY = 0.006586 USD). "
        "The yen weakened 0.4% over the week.", "XE Currency Data",
        "https://www.xe.com/currencyconverter/convert/?From=USD&To=JPY", "2026-11-30",
        "usd jpy dollar yen exchange rate convert conversion currency forex"),
    Doc(_W, "USD to EUR exchange rate today: 1 US dollar = 0.9223 euros",
        "Mid-market rate as of Nov 30, 2026 08:00 UTC: 1 USD = 0.9223 EUR (EUR/USD 1.0843). "
        "The euro is up 0.2% against the dollar this week.", "XE Currency Data",
        "https://www.xe.com/currencyconverter/convert/?From=USD&To=EUR", "2026-11-30",
        "usd eur dollar euro euros exchange rate convert conversion currency forex"),
    Doc(_W, "USD to GBP exchange rate today: 1 US dollar = 0.7864 British pounds",
        "Mid-market rate as of Nov 30, 2026 08:00 UTC: 1 USD = 0.7864 GBP (GBP/USD 1.2716). "
        "Sterling held steady after the Bank of England's November decision.", "XE Currency Data",
        "https://www.xe.com/currencyconverter/convert/?From=USD&To=GBP", "2026-11-30",
        "usd gbp dollar pound pounds sterling exchange rate convert conversion currency forex"),
    Doc(_W, "USD to INR exchange rate today: 1 US dollar = 84.62 Indian rupees",
        "Mid-market rate as of Nov 30, 2026 08:00 UTC: 1 USD = 84.62 INR (1 INR = 0.011818 USD). "
        "The rupee traded in a narrow 84.41-84.75 band this week.", "XE Currency Data",
        "https://www.xe.com/currencyconverter/convert/?From=USD&To=INR", "2026-11-30",
        "usd inr dollar rupee rupees india exchange rate convert conversion currency forex"),
    Doc(_W, "USD to CAD exchange rate today: 1 US dollar = 1.3968 Canadian dollars",
        "Mid-market rate as of Nov 30, 2026 08:00 UTC: 1 USD = 1.3968 CAD. The loonie slipped 0.3% "
        "as oil prices eased.", "XE Currency Data",
        "https://www.xe.com/currencyconverter/convert/?From=USD&To=CAD", "2026-11-30",
        "usd cad dollar canadian loonie exchange rate convert conversion currency forex"),
    Doc(_W, "EUR to JPY exchange rate today: 1 euro = 164.63 Japanese yen",
        "Mid-market rate as of Nov 30, 2026 08:00 UTC: 1 EUR = 164.63 JPY.", "XE Currency Data",
        "https://www.xe.com/currencyconverter/convert/?From=EUR&To=JPY", "2026-11-30",
        "eur jpy euro yen exchange rate convert conversion currency forex"),
    Doc(_W, "USD to BRL exchange rate today: 1 US dollar = 5.412 Brazilian reais",
        "Mid-market rate as of Nov 30, 2026 08:00 UTC: 1 USD = 5.412 BRL.", "XE Currency Data",
        "https://www.xe.com/currencyconverter/convert/?From=USD&To=BRL", "2026-11-30",
        "usd brl dollar real reais brazil exchange rate convert conversion currency forex"),
    # ---------------------------------------------------------------- populations & reference
    Doc(_W, "India population 2026: 1.472 billion (UN estimate)",
        "India's population is estimated at 1.472 billion in mid-2026, growing about 0.8% a year, "
        "according to the UN World Population Prospects.", "United Nations DESA",
        "https://population.un.org/wpp/country/india", "2026-07-11",
        "india population people inhabitants how many"),
    Doc(_W, "Japan population 2026: 123.1 million", "Japan's population fell to 123.1 million in "
        "2026, down 0.5% from a year earlier, with 29.6% aged 65 or older.", "Statistics Bureau of Japan",
        "https://www.stat.go.jp/english/data/jinsui/2026np", "2026-10-20",
        "japan population people inhabitants how many aging"),
    Doc(_W, "Germany population 2026: 83.6 million", "Germany had 83.6 million inhabitants at the "
        "end of June 2026, according to Destatis.", "Destatis",
        "https://www.destatis.de/EN/Themes/Society-Environment/Population/_node.html", "2026-09-18",
        "germany population people inhabitants how many"),
    Doc(_W, "Brazil population 2026: 213.9 million", "IBGE estimates Brazil's population at "
        "213.9 million as of July 1, 2026.", "IBGE",
        "https://www.ibge.gov.br/en/statistics/social/population.html", "2026-08-28",
        "brazil population people inhabitants how many"),
    Doc(_W, "United States population 2026: 343.2 million", "The U.S. Census Bureau population "
        "clock shows 343.2 million residents in November 2026.", "U.S. Census Bureau",
        "https://www.census.gov/popclock/", "2026-11-29",
        "united states usa us america population people inhabitants how many"),
    Doc(_W, "Australia population 2026: 27.9 million", "Australia's estimated resident population "
        "reached 27.9 million in the June quarter 2026, up 1.6% over the year.",
        "Australian Bureau of Statistics", "https://www.abs.gov.au/statistics/people/population",
        "2026-11-20", "australia population people inhabitants how many"),
    Doc(_W, "Mumbai metropolitan region population: 21.3 million", "The Mumbai Metropolitan Region "
        "has an estimated 21.3 million residents in 2026, making it India's second-largest urban area.",
        "World Population Review", "https://worldpopulationreview.com/cities/india/mumbai", "2026-06-02",
        "mumbai population people city metro inhabitants how many"),
    Doc(_W, "Tokyo population 2026: 37.0 million in the Greater Tokyo Area",
        "Greater Tokyo is home to about 37.0 million people; the 23 special wards have 9.8 million.",
        "Tokyo Metropolitan Government", "https://www.toukei.metro.tokyo.lg.jp/jsuikei/js-index.htm",
        "2026-10-01", "tokyo population people city metro inhabitants how many"),
    Doc(_W, "WHO air quality guidelines: PM2.5 limit 15 µg/m³ (24-hour mean)",
        "The WHO global air quality guidelines set PM2.5 at 15 µg/m³ as a 24-hour mean and 5 µg/m³ "
        "as an annual mean; PM10 at 45 µg/m³ (24-hour).", "World Health Organization",
        "https://www.who.int/news-room/fact-sheets/detail/ambient-(outdoor)-air-quality-and-health",
        "2026-03-14", "who pm2.5 pm25 guideline limit air quality pollution safe level particulate"),
    Doc(_W, "Marathon distance: 42.195 kilometres (26.2 miles)", "The official marathon distance "
        "is 42.195 km, standardised by World Athletics.", "World Athletics",
        "https://worldathletics.org/disciplines/road-running/marathon", "2026-04-02",
        "marathon distance km kilometres miles race length"),
    # ---------------------------------------------------------------- prices
    Doc(_W, "Gold price today: $4,185.40 per troy ounce", "Spot gold traded at $4,185.40 an ounce on "
        "Nov 30, 2026, up 38% year to date.", "Kitco", "https://www.kitco.com/charts/gold", "2026-11-30",
        "gold price ounce spot precious metal xau"),
    Doc(_W, "Brent crude oil price: $63.20 per barrel", "Brent crude settled at $63.20 a barrel on "
        "Nov 27, 2026; WTI closed at $59.85.", "Bloomberg",
        "https://www.bloomberg.com/energy", "2026-11-27", "brent crude oil price barrel wti energy"),
    Doc(_W, "Bitcoin price today: $91,250", "Bitcoin traded at $91,250 on Nov 30, 2026, down 4.1% "
        "over the past 7 days; market cap about $1.81 trillion.", "CoinDesk",
        "https://www.coindesk.com/price/bitcoin", "2026-11-30",
        "bitcoin btc price crypto cryptocurrency"),
    Doc(_W, "iPhone 18 Pro price: starts at $1,099 in the US", "Apple's iPhone 18 Pro starts at "
        "$1,099 for 256 GB; the iPhone 18 Pro Max starts at $1,299.", "Apple",
        "https://www.apple.com/shop/buy-iphone/iphone-18-pro", "2026-09-15",
        "iphone 18 pro price cost apple smartphone"),
    Doc(_W, "Sony WH-1000XM6 price: $449.99", "Sony's WH-1000XM6 noise-cancelling headphones list "
        "at $449.99 in the US and EUR 449 in Europe.", "Sony Electronics",
        "https://electronics.sony.com/audio/headphones/wh-1000xm6", "2026-05-20",
        "sony wh-1000xm6 headphones price cost noise cancelling"),
    Doc(_W, "Tesla Model Y price: from $44,990", "The Tesla Model Y Long Range RWD starts at $44,990 "
        "before incentives in the US.", "Tesla", "https://www.tesla.com/modely/design", "2026-10-08",
        "tesla model y price cost electric car ev"),
    Doc(_W, "Federal funds rate: target range 3.50% to 3.75%", "The Federal Reserve held its target "
        "range at 3.50%-3.75% at the Oct 28, 2026 FOMC meeting.", "Federal Reserve",
        "https://www.federalreserve.gov/monetarypolicy/openmarket.htm", "2026-10-28",
        "federal funds rate fed interest rate fomc target range"),
    Doc(_W, "US inflation: CPI up 2.7% year over year in October 2026", "The consumer price index "
        "rose 2.7% in the 12 months to October 2026; core CPI rose 2.9%.", "U.S. Bureau of Labor Statistics",
        "https://www.bls.gov/cpi/", "2026-11-13", "us inflation cpi consumer price index october"),
    # ---------------------------------------------------------------- earnings news
    Doc(_N, "NVIDIA earnings: record third-quarter revenue of $71.3 billion",
        "NVIDIA posted revenue of $71.3 billion for the third quarter of fiscal 2027, up 25% from "
        "$57.0 billion a year earlier; data center revenue was $63.9 billion.", "Reuters",
        "https://www.reuters.com/technology/nvidia-q3-fiscal-2027-results-2026-11-18/", "2026-11-18",
        "nvidia earnings quarterly revenue results q3 third quarter fiscal 2027 gpu data center"),
    Doc(_N, "NVIDIA guides fourth-quarter revenue to $78.0 billion",
        "NVIDIA expects fourth-quarter fiscal 2027 revenue of $78.0 billion, plus or minus 2%, with "
        "gross margin near 74.5%.", "CNBC",
        "https://www.cnbc.com/2026/11/18/nvidia-outlook-fourth-quarter.html", "2026-11-18",
        "nvidia earnings guidance outlook revenue fourth quarter forecast"),
    Doc(_N, "Apple fiscal Q4 revenue rises to $108.2 billion on iPhone 18 demand",
        "Apple reported fiscal fourth-quarter revenue of $108.2 billion, up 6% year over year; iPhone "
        "revenue was $53.6 billion and services $30.1 billion.", "Bloomberg",
        "https://www.bloomberg.com/news/articles/2026-10-29/apple-q4-results", "2026-10-29",
        "apple earnings quarterly revenue results q4 fourth quarter iphone services"),
    Doc(_N, "Microsoft quarterly revenue hits $86.9 billion as Azure grows 37%",
        "Microsoft reported first-quarter fiscal 2027 revenue of $86.9 billion; Azure and other cloud "
        "services revenue grew 37%.", "Financial Times",
        "https://www.ft.com/content/microsoft-q1-fy27-results", "2026-10-28",
        "microsoft earnings quarterly revenue results azure cloud q1"),
    Doc(_N, "Alphabet third-quarter revenue climbs to $112.4 billion",
        "Alphabet's Q3 2026 revenue rose 15% to $112.4 billion; Google Cloud revenue reached "
        "$17.8 billion.", "Reuters",
        "https://www.reuters.com/technology/alphabet-q3-2026-results/", "2026-10-27",
        "alphabet google earnings quarterly revenue results q3 cloud"),
    Doc(_N, "Amazon Q3 revenue reaches $201.6 billion; AWS up 21%",
        "Amazon reported third-quarter 2026 net sales of $201.6 billion; AWS segment sales were "
        "$38.9 billion.", "CNBC", "https://www.cnbc.com/2026/10/30/amazon-q3-2026-earnings.html",
        "2026-10-30", "amazon aws earnings quarterly revenue results q3 net sales"),
    Doc(_N, "Tesla delivers 512,400 vehicles in the third quarter",
        "Tesla delivered 512,400 vehicles in Q3 2026, up 7% from a year earlier, and produced "
        "498,700.", "Associated Press", "https://apnews.com/article/tesla-q3-2026-deliveries",
        "2026-10-02", "tesla deliveries vehicles q3 third quarter ev production"),
    Doc(_N, "Meta third-quarter revenue rises to $60.8 billion",
        "Meta Platforms posted Q3 2026 revenue of $60.8 billion, up 19%, and raised its capital "
        "expenditure outlook.", "The Wall Street Journal",
        "https://www.wsj.com/tech/meta-q3-2026-earnings", "2026-10-29",
        "meta facebook earnings quarterly revenue results q3"),
    Doc(_N, "NVIDIA fiscal Q3 2024 results: revenue of $18.1 billion",
        "Archive: NVIDIA reported third-quarter fiscal 2024 revenue of $18.1 billion in November "
        "2023.", "Reuters", "https://www.reuters.com/technology/nvidia-q3-fiscal-2024-results-2023-11-21/",
        "2023-11-21", "nvidia quarterly revenue results q3 2023 archive"),
    # ---------------------------------------------------------------- climate & world news
    Doc(_N, "COP31 climate summit in Antalya ends with $420 billion-a-year finance pledge",
        "Negotiators at COP31 in Antalya agreed on Nov 21, 2026 to mobilize $420 billion a year in "
        "climate finance by 2035; 196 parties adopted the final text.", "Reuters",
        "https://www.reuters.com/sustainability/cop31-antalya-final-deal-2026-11-21/", "2026-11-21",
        "climate summit cop31 antalya finance pledge agreement latest news"),
    Doc(_N, "COP31: loss and damage fund pledges reach $1.2 billion",
        "Pledges to the loss and damage fund reached $1.2 billion by the close of COP31, led by "
        "Germany ($300 million) and Japan ($150 million).", "BBC News",
        "https://www.bbc.com/news/science-environment-cop31-loss-damage", "2026-11-20",
        "climate summit cop31 loss damage fund pledges"),
    Doc(_N, "2026 on track to be third-warmest year, 1.48°C above pre-industrial levels",
        "The WMO says global mean temperature for January-October 2026 was 1.48°C above the "
        "1850-1900 average.", "World Meteorological Organization",
        "https://wmo.int/news/media-centre/2026-state-of-climate-update", "2026-11-10",
        "climate global temperature warming 2026 wmo record"),
    Doc(_N, "COP28 in Dubai agrees to transition away from fossil fuels",
        "Archive: the COP28 summit in Dubai closed on Dec 13, 2023 with a call to transition away "
        "from fossil fuels.", "Associated Press", "https://apnews.com/article/cop28-dubai-deal-2023",
        "2023-12-13", "climate summit cop28 dubai fossil fuels 2023 archive"),
    Doc(_N, "Delhi air quality turns 'very unhealthy' as stubble burning peaks",
        "Delhi's average AQI crossed 210 this week as crop-residue fires and still winds trapped "
        "smog; schools moved classes online for two days.", "The Hindu",
        "https://www.thehindu.com/news/cities/Delhi/delhi-air-quality-november-2026", "2026-11-26",
        "delhi air quality pollution smog aqi stubble"),
    Doc(_N, "Mumbai metro Line 3 ridership passes 600,000 a day",
        "Mumbai's underground Aqua Line now carries over 600,000 passengers daily, MMRC said.",
        "Hindustan Times", "https://www.hindustantimes.com/cities/mumbai-news/metro-line-3-ridership",
        "2026-11-24", "mumbai metro transport ridership aqua line"),
    Doc(_N, "Bank of Japan holds rates at 0.75%, yen slips past 151 per dollar",
        "The Bank of Japan kept its policy rate at 0.75% on Nov 19; the yen weakened past 151 per "
        "dollar after the decision.", "Nikkei Asia",
        "https://asia.nikkei.com/economy/boj-holds-rates-november-2026", "2026-11-19",
        "bank of japan boj interest rate yen dollar"),
    Doc(_N, "ECB keeps deposit rate at 2.00% for fourth straight meeting",
        "The European Central Bank left its deposit facility rate at 2.00% on Oct 29, 2026.",
        "Financial Times", "https://www.ft.com/content/ecb-october-2026-decision", "2026-10-29",
        "ecb european central bank interest rate deposit euro"),
    Doc(_N, "Tokyo hosts record 4.1 million foreign visitors in October",
        "Japan welcomed 4.1 million international visitors in October 2026, a monthly record, JNTO "
        "reported.", "Japan Times", "https://www.japantimes.co.jp/news/2026/11/19/tourism-record/",
        "2026-11-19", "tokyo japan tourism visitors record travel"),
    Doc(_N, "Global smartphone shipments rise 3% to 318 million in Q3",
        "Worldwide smartphone shipments grew 3% year over year to 318 million units in Q3 2026, "
        "IDC said; Apple led with 21% share.", "IDC", "https://www.idc.com/promo/smartphone-market-share",
        "2026-10-16", "smartphone shipments market share q3 apple samsung"),
)

_STOP: Final[frozenset[str]] = frozenset(
    ["a", "an", "the", "of", "for", "to", "in", "on", "at", "by", "and", "or", "is", "are", "was", "were", "what", "whats", "what's", "how", "much", "many", "latest", "current", "today", "now", "me", "my", "find", "search", "show", "tell", "give", "get", "about", "with", "from", "news", "please", "recent", "this", "that", "last", "new"]
)
_TOKEN = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")


def _tokens(text: str) -> set[str]:
    return {t for t in _TOKEN.findall(text.lower()) if t not in _STOP}


_INDEX: Final[tuple[tuple[Doc, frozenset[str], frozenset[str]], ...]] = tuple(
    (d, frozenset(_tokens(d.title)), frozenset(_tokens(d.snippet + " " + d.keywords + " " + d.source)))
    for d in CORPUS
)


def _search(query: str, max_results: int, kinds: tuple[str, ...]) -> dict[str, Any]:
    q = _tokens(query)
    scored: list[tuple[int, str, str, Doc]] = []
    for doc, title, body in _INDEX:
        if doc.kind not in kinds:
            continue
        score = sum(2 if t in title else 1 if t in body else 0 for t in q)
        if score:
            scored.append((-score, _neg_date(doc.published), doc.url, doc))
    scored.sort(key=lambda s: s[:3])
    top = scored[:max_results]
    return {
        "query": query,
        "total_results": len(scored),
        "results": [
            {"rank": i + 1, "title": d.title, "snippet": d.snippet, "source": d.source, "url": d.url,
             "published": d.published}
            for i, (_, _, _, d) in enumerate(top)
        ],
    }


def _neg_date(iso: str) -> str:
    """A sort key that orders ISO dates newest first."""
    return "".join(chr(ord("9") - ord(c) + ord("0")) if c.isdigit() else c for c in iso)


def web_search(query: str, max_results: int = 5) -> dict[str, Any]:
    return _search(query, max_results, (_W, _N))


def news_search(query: str, max_results: int = 5) -> dict[str, Any]:
    return _search(query, max_results, (_N,))

"""The weather server: current conditions, multi-day forecasts and air quality for ~70 cities.

Every figure is a pure function of (city, date): a seasonal model per city (annual mean,
seasonal amplitude, hottest day of the year, diurnal range) evaluated on the environment's
fixed "today" plus a SHA-256-derived jitter, so outputs are plausible and byte-stable.
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, Final

from ._common import TODAY, ToolError, unit_fraction, unit_jitter


@dataclass(frozen=True)
class City:
    name: str
    country: str
    lat: float
    lon: float
    mean_c: float  # annual mean temperature
    amp_c: float  # half the warmest-coldest month difference
    peak_doy: int  # day of year of the warmest days
    diurnal_c: float  # typical daily high-low spread
    humidity: int  # typical relative humidity, %
    wet: float  # base chance of a rainy day (0..1) in the wet season
    pm25: float  # typical PM2.5, µg/m³
    utc_offset: float  # hours


def _c(name: str, country: str, lat: float, lon: float, mean: float, amp: float, peak: int | None,
       diurnal: float, hum: int, wet: float, pm25: float, off: float) -> City:
    if peak is None:
        peak = 200 if lat >= 0 else 20
    return City(name, country, lat, lon, mean, amp, peak, diurnal, hum, wet, pm25, off)


CITIES: Final[tuple[City, ...]] = (
    _c("London", "United Kingdom", 51.51, -0.13, 11.8, 7.0, None, 7, 78, 0.45, 10, 0),
    _c("Paris", "France", 48.86, 2.35, 12.5, 8.0, None, 8, 75, 0.40, 12, 1),
    _c("Berlin", "Germany", 52.52, 13.40, 10.3, 9.5, None, 8, 74, 0.38, 13, 1),
    _c("Madrid", "Spain", 40.42, -3.70, 15.0, 10.5, None, 12, 57, 0.20, 10, 1),
    _c("Rome", "Italy", 41.90, 12.50, 15.8, 8.8, None, 10, 70, 0.30, 15, 1),
    _c("Amsterdam", "Netherlands", 52.37, 4.90, 10.5, 7.0, None, 7, 82, 0.48, 11, 1),
    _c("Stockholm", "Sweden", 59.33, 18.07, 7.5, 9.8, None, 6, 80, 0.40, 6, 1),
    _c("Moscow", "Russia", 55.76, 37.62, 5.8, 13.5, None, 7, 78, 0.42, 14, 3),
    _c("Istanbul", "Türkiye", 41.01, 28.98, 15.2, 9.0, None, 7, 73, 0.35, 22, 3),
    _c("Athens", "Greece", 37.98, 23.73, 18.5, 9.5, None, 9, 62, 0.22, 18, 2),
    _c("Vienna", "Austria", 48.21, 16.37, 11.4, 10.5, None, 8, 72, 0.35, 14, 1),
    _c("Zurich", "Switzerland", 47.38, 8.54, 9.9, 9.0, None, 8, 76, 0.42, 10, 1),
    _c("Dublin", "Ireland", 53.35, -6.26, 10.0, 5.3, None, 7, 82, 0.52, 8, 0),
    _c("Lisbon", "Portugal", 38.72, -9.14, 17.4, 6.3, None, 9, 70, 0.30, 9, 0),
    _c("Warsaw", "Poland", 52.23, 21.01, 8.7, 10.5, None, 8, 78, 0.38, 21, 1),
    _c("Reykjavik", "Iceland", 64.15, -21.94, 5.0, 5.5, None, 5, 78, 0.55, 5, 0),
    _c("New York", "United States", 40.71, -74.01, 13.2, 12.0, None, 8, 63, 0.33, 9, -5),
    _c("Los Angeles", "United States", 34.05, -118.24, 18.9, 4.5, 230, 10, 60, 0.10, 14, -8),
    _c("Chicago", "United States", 41.88, -87.63, 10.5, 14.5, None, 9, 68, 0.35, 10, -6),
    _c("San Francisco", "United States", 37.77, -122.42, 14.6, 3.5, 260, 8, 74, 0.20, 8, -8),
    _c("Miami", "United States", 25.76, -80.19, 25.2, 4.2, None, 7, 73, 0.35, 8, -5),
    _c("Seattle", "United States", 47.61, -122.33, 11.5, 7.5, None, 8, 75, 0.50, 7, -8),
    _c("Houston", "United States", 29.76, -95.37, 21.0, 8.0, None, 9, 75, 0.30, 11, -6),
    _c("Denver", "United States", 39.74, -104.99, 10.4, 11.5, None, 15, 52, 0.20, 8, -7),
    _c("Phoenix", "United States", 33.45, -112.07, 24.0, 11.0, None, 14, 35, 0.07, 10, -7),
    _c("Toronto", "Canada", 43.65, -79.38, 9.0, 13.0, None, 8, 72, 0.38, 8, -5),
    _c("Vancouver", "Canada", 49.28, -123.12, 11.0, 7.0, None, 6, 80, 0.55, 6, -8),
    _c("Montreal", "Canada", 45.50, -73.57, 7.4, 15.0, None, 8, 70, 0.38, 8, -5),
    _c("Mexico City", "Mexico", 19.43, -99.13, 17.0, 3.0, 130, 14, 55, 0.20, 20, -6),
    _c("Sao Paulo", "Brazil", -23.55, -46.63, 20.5, 3.5, None, 9, 76, 0.45, 17, -3),
    _c("Rio de Janeiro", "Brazil", -22.91, -43.17, 24.5, 3.0, None, 7, 78, 0.38, 13, -3),
    _c("Buenos Aires", "Argentina", -34.60, -58.38, 18.0, 6.8, None, 9, 72, 0.30, 14, -3),
    _c("Lima", "Peru", -12.05, -77.04, 19.5, 3.5, None, 5, 82, 0.05, 25, -5),
    _c("Bogota", "Colombia", 4.71, -74.07, 14.5, 0.5, None, 12, 78, 0.50, 16, -5),
    _c("Santiago", "Chile", -33.45, -70.67, 15.0, 6.5, None, 15, 60, 0.10, 24, -3),
    _c("Tokyo", "Japan", 35.68, 139.69, 16.3, 10.5, 215, 8, 66, 0.30, 10, 9),
    _c("Osaka", "Japan", 34.69, 135.50, 17.1, 10.8, 215, 8, 65, 0.30, 11, 9),
    _c("Seoul", "South Korea", 37.57, 126.98, 12.8, 14.5, 210, 9, 63, 0.25, 22, 9),
    _c("Beijing", "China", 39.90, 116.41, 12.9, 15.5, None, 11, 55, 0.15, 38, 8),
    _c("Shanghai", "China", 31.23, 121.47, 17.1, 11.5, 210, 7, 74, 0.35, 30, 8),
    _c("Hong Kong", "China", 22.32, 114.17, 23.5, 5.5, 205, 5, 77, 0.25, 18, 8),
    _c("Singapore", "Singapore", 1.35, 103.82, 27.6, 0.8, 140, 7, 84, 0.55, 15, 8),
    _c("Bangkok", "Thailand", 13.76, 100.50, 28.6, 1.8, 110, 9, 74, 0.30, 28, 7),
    _c("Jakarta", "Indonesia", -6.21, 106.85, 27.5, 0.6, 280, 8, 80, 0.55, 38, 7),
    _c("Manila", "Philippines", 14.60, 120.98, 27.9, 1.7, 130, 8, 78, 0.40, 20, 8),
    _c("Kuala Lumpur", "Malaysia", 3.14, 101.69, 27.6, 0.6, 120, 9, 80, 0.55, 20, 8),
    _c("Hanoi", "Vietnam", 21.03, 105.85, 23.9, 6.5, 185, 7, 79, 0.30, 42, 7),
    _c("Mumbai", "India", 19.08, 72.88, 27.2, 2.3, 135, 8, 70, 0.08, 45, 5.5),
    _c("Delhi", "India", 28.61, 77.21, 25.0, 9.0, 160, 13, 55, 0.05, 120, 5.5),
    _c("Bengaluru", "India", 12.97, 77.59, 23.9, 2.5, 110, 10, 68, 0.20, 32, 5.5),
    _c("Chennai", "India", 13.08, 80.27, 28.6, 3.5, 150, 8, 75, 0.45, 30, 5.5),
    _c("Kolkata", "India", 22.57, 88.36, 26.8, 5.5, 140, 9, 72, 0.10, 75, 5.5),
    _c("Karachi", "Pakistan", 24.86, 67.00, 26.0, 5.5, 170, 10, 62, 0.03, 60, 5),
    _c("Dhaka", "Bangladesh", 23.81, 90.41, 26.1, 4.5, 150, 9, 74, 0.10, 85, 6),
    _c("Dubai", "United Arab Emirates", 25.20, 55.27, 28.0, 7.5, 210, 10, 58, 0.03, 40, 4),
    _c("Riyadh", "Saudi Arabia", 24.71, 46.68, 26.5, 10.0, 210, 14, 28, 0.03, 45, 3),
    _c("Tehran", "Iran", 35.69, 51.39, 17.5, 12.5, 205, 11, 40, 0.12, 35, 3.5),
    _c("Cairo", "Egypt", 30.04, 31.24, 22.3, 7.5, 205, 11, 56, 0.02, 55, 2),
    _c("Lagos", "Nigeria", 6.52, 3.38, 27.0, 1.5, 70, 7, 82, 0.35, 45, 1),
    _c("Nairobi", "Kenya", -1.29, 36.82, 18.0, 1.5, 50, 12, 70, 0.35, 18, 3),
    _c("Johannesburg", "South Africa", -26.20, 28.05, 16.0, 5.5, None, 13, 55, 0.35, 25, 2),
    _c("Cape Town", "South Africa", -33.92, 18.42, 16.7, 4.5, None, 9, 70, 0.20, 12, 2),
    _c("Casablanca", "Morocco", 33.57, -7.59, 18.3, 5.0, 220, 8, 75, 0.20, 20, 1),
    _c("Sydney", "Australia", -33.87, 151.21, 18.4, 5.0, None, 8, 65, 0.30, 8, 11),
    _c("Melbourne", "Australia", -37.81, 144.96, 15.0, 5.5, None, 10, 64, 0.30, 8, 11),
    _c("Brisbane", "Australia", -27.47, 153.03, 20.8, 5.0, None, 10, 66, 0.35, 7, 10),
    _c("Perth", "Australia", -31.95, 115.86, 18.6, 6.0, None, 12, 55, 0.15, 8, 8),
    _c("Auckland", "New Zealand", -36.85, 174.76, 15.3, 4.3, None, 7, 78, 0.40, 6, 13),
)

_ALIASES: Final[dict[str, str]] = {
    "nyc": "New York", "new york city": "New York", "bombay": "Mumbai", "new delhi": "Delhi",
    "bangalore": "Bengaluru", "madras": "Chennai", "calcutta": "Kolkata", "la": "Los Angeles",
    "sf": "San Francisco", "rio": "Rio de Janeiro", "cdmx": "Mexico City", "peking": "Beijing",
    "kl": "Kuala Lumpur", "bogotá": "Bogota",
}


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return " ".join("".join(ch for ch in decomposed if not unicodedata.combining(ch)).lower().split())


_BY_KEY: Final[dict[str, City]] = {_fold(c.name): c for c in CITIES}


def find_city(query: str) -> City:
    """Resolve a city name (case/accent-insensitive; aliases; ``"Paris, France"`` form)."""
    key = _fold(query)
    if not key:
        raise ToolError("city must not be empty")
    candidates = [key]
    if "," in key:
        candidates.append(key.split(",", 1)[0].strip())
    for cand in candidates:
        cand = _fold(_ALIASES.get(cand, cand))
        if cand in _BY_KEY:
            return _BY_KEY[cand]
    raise ToolError(
        f"unknown city {query!r}: no weather station data for it. Covered cities include "
        + ", ".join(c.name for c in CITIES[:12])
        + f" and {len(CITIES) - 12} more"
    )


_COMPASS: Final[tuple[str, ...]] = ("N", "NE", "E", "SE", "S", "SW", "W", "NW")

_AQI_BREAKPOINTS: Final[tuple[tuple[float, float, int, int, str], ...]] = (
    (0.0, 9.0, 0, 50, "Good"),
    (9.1, 35.4, 51, 100, "Moderate"),
    (35.5, 55.4, 101, 150, "Unhealthy for Sensitive Groups"),
    (55.5, 125.4, 151, 200, "Unhealthy"),
    (125.5, 225.4, 201, 300, "Very Unhealthy"),
    (225.5, 325.4, 301, 500, "Hazardous"),
)

_ADVICE: Final[dict[str, str]] = {
    "Good": "Air quality is satisfactory; outdoor activity is fine for everyone.",
    "Moderate": "Acceptable air quality; unusually sensitive people should limit prolonged exertion outdoors.",
    "Unhealthy for Sensitive Groups": "Children, older adults and people with heart or lung disease should reduce prolonged outdoor exertion.",
    "Unhealthy": "Everyone should reduce prolonged or heavy exertion outdoors; sensitive groups should stay indoors.",
    "Very Unhealthy": "Health alert: avoid outdoor exertion, keep windows closed and run an air purifier if available.",
    "Hazardous": "Emergency conditions: everyone should stay indoors and avoid all outdoor activity.",
}


def _day_mean(city: City, day: date) -> float:
    doy = day.timetuple().tm_yday
    seasonal = city.amp_c * math.cos(2 * math.pi * (doy - city.peak_doy) / 365.0)
    return city.mean_c + seasonal + 1.6 * unit_jitter("mean", city.name, day.isoformat())


def _season_wetness(city: City, day: date) -> float:
    """Chance of rain on ``day``: wetter in each city's warm season for monsoon climates."""
    doy = day.timetuple().tm_yday
    phase = math.cos(2 * math.pi * (doy - city.peak_doy - 30) / 365.0)
    if city.amp_c < 6 and abs(city.lat) < 30:  # tropical: rain follows the monsoon
        return max(0.02, min(0.9, city.wet * (1.0 + 1.2 * phase)))
    return max(0.02, min(0.9, city.wet * (1.0 - 0.25 * phase)))


def _day(city: City, day: date) -> dict[str, Any]:
    mean = _day_mean(city, day)
    spread = city.diurnal_c * (1.0 + 0.15 * unit_jitter("spread", city.name, day.isoformat()))
    high = mean + spread / 2
    low = mean - spread / 2
    rain_p = _season_wetness(city, day)
    roll = unit_fraction("rain", city.name, day.isoformat())
    cloud = unit_fraction("cloud", city.name, day.isoformat())
    if roll < rain_p:
        amount = 0.5 + 24.0 * unit_fraction("mm", city.name, day.isoformat()) ** 2
        if high < 1.0:
            conditions = "Snow" if amount > 4 else "Light snow"
        elif amount > 12:
            conditions = "Thunderstorms" if mean > 20 else "Heavy rain"
        else:
            conditions = "Light rain" if amount < 4 else "Rain"
        chance = int(round(55 + 40 * (1 - roll / max(rain_p, 1e-9))))
    else:
        amount = 0.0
        if city.pm25 > 60 and cloud < 0.6:
            conditions = "Haze"
        elif cloud < 0.35:
            conditions = "Sunny" if city.humidity < 75 else "Mostly sunny"
        elif cloud < 0.7:
            conditions = "Partly cloudy"
        else:
            conditions = "Overcast" if city.wet > 0.3 else "Mostly cloudy"
        chance = int(round(100 * rain_p * 0.6 * cloud))
    wind = 6.0 + 18.0 * unit_fraction("wind", city.name, day.isoformat())
    return {
        "high": high,
        "low": low,
        "conditions": conditions,
        "precip_chance": max(0, min(100, chance)),
        "precip_mm": amount,
        "wind_kmh": wind,
        "wind_dir": _COMPASS[int(unit_fraction("dir", city.name, day.isoformat()) * 8) % 8],
        "humidity": int(round(max(12, min(98, city.humidity + 12 * unit_jitter("hum", city.name, day.isoformat())
                                            + (10 if amount else 0))))),
    }


def _tz(city: City) -> str:
    sign = "+" if city.utc_offset >= 0 else "-"
    hours = int(abs(city.utc_offset))
    minutes = int(round((abs(city.utc_offset) - hours) * 60))
    return f"{sign}{hours:02d}:{minutes:02d}"


def _c_to_f(c: float) -> float:
    return c * 9.0 / 5.0 + 32.0


def _feels_like(temp_c: float, humidity: int, wind_kmh: float) -> float:
    if temp_c >= 27:  # heat index (Steadman/Rothfusz simplified, in °C)
        return temp_c + 0.1 * (humidity - 40) * (temp_c - 26) / 4
    if temp_c <= 10 and wind_kmh > 4.8:  # wind chill (Environment Canada formula)
        v = wind_kmh**0.16
        return 13.12 + 0.6215 * temp_c - 11.37 * v + 0.3965 * temp_c * v
    return temp_c


def get_weather(city: str, units: str = "metric") -> dict[str, Any]:
    c = find_city(city)
    d = _day(c, TODAY)
    temp_c = d["low"] + 0.85 * (d["high"] - d["low"]) + 0.4 * unit_jitter("now", c.name, TODAY.isoformat())
    feels_c = _feels_like(temp_c, d["humidity"], d["wind_kmh"])
    pressure = 1013.0 + 9.0 * unit_jitter("pressure", c.name, TODAY.isoformat()) - (6 if d["precip_mm"] else 0)
    visibility_km = 10.0 if d["conditions"] in ("Sunny", "Mostly sunny", "Partly cloudy") else (
        3.5 if d["conditions"] == "Haze" else 7.0)
    uv = max(0, round(11 * math.cos(math.radians(abs(c.lat - _solar_declination(TODAY)))) ** 2
                      * (0.4 if d["precip_mm"] else 1.0)))
    imperial = units == "imperial"
    out: dict[str, Any] = {
        "city": c.name,
        "country": c.country,
        "latitude": c.lat,
        "longitude": c.lon,
        "observed_at": f"{TODAY.isoformat()}T14:00:00{_tz(c)}",
        "units": units,
        "conditions": d["conditions"],
        "humidity_pct": d["humidity"],
        "pressure_hpa": round(pressure),
        "uv_index": uv,
        "wind_direction": d["wind_dir"],
    }
    if imperial:
        out.update({
            "temperature": round(_c_to_f(temp_c), 1),
            "feels_like": round(_c_to_f(feels_c), 1),
            "temperature_unit": "°F",
            "wind_speed": round(d["wind_kmh"] / 1.609344, 1),
            "wind_speed_unit": "mph",
            "visibility": round(visibility_km / 1.609344, 1),
            "visibility_unit": "mi",
        })
    else:
        out.update({
            "temperature": round(temp_c, 1),
            "feels_like": round(feels_c, 1),
            "temperature_unit": "°C",
            "wind_speed": round(d["wind_kmh"], 1),
            "wind_speed_unit": "km/h",
            "visibility": visibility_km,
            "visibility_unit": "km",
        })
    return out


def _solar_declination(day: date) -> float:
    doy = day.timetuple().tm_yday
    return -23.44 * math.cos(2 * math.pi * (doy + 10) / 365.0)


def get_forecast(city: str, days: int) -> dict[str, Any]:
    c = find_city(city)
    out_days: list[dict[str, Any]] = []
    for i in range(days):
        day = TODAY + timedelta(days=i)
        d = _day(c, day)
        out_days.append({
            "date": day.isoformat(),
            "weekday": day.strftime("%A"),
            "high": round(d["high"], 1),
            "low": round(d["low"], 1),
            "conditions": d["conditions"],
            "precipitation_chance_pct": d["precip_chance"],
            "precipitation_mm": round(d["precip_mm"], 1),
            "humidity_pct": d["humidity"],
            "wind_speed": round(d["wind_kmh"], 1),
        })
    return {
        "city": c.name,
        "country": c.country,
        "issued_at": f"{TODAY.isoformat()}T06:00:00{_tz(c)}",
        "units": {"temperature": "°C", "precipitation": "mm", "wind_speed": "km/h"},
        "days": out_days,
    }


def _aqi(pm25: float) -> tuple[int, str]:
    conc = math.floor(pm25 * 10) / 10
    for lo_c, hi_c, lo_i, hi_i, label in _AQI_BREAKPOINTS:
        if conc <= hi_c:
            return int(round((hi_i - lo_i) / (hi_c - lo_c) * (max(conc, lo_c) - lo_c) + lo_i)), label
    return 500, "Hazardous"


def get_air_quality(city: str) -> dict[str, Any]:
    c = find_city(city)
    key = TODAY.isoformat()
    doy = TODAY.timetuple().tm_yday
    # Winter inversions trap pollution; strongest in the northern plains of South Asia and China.
    winter = math.cos(2 * math.pi * (doy - (15 if c.lat >= 0 else 196)) / 365.0)
    boost = 1.0 + (0.6 if c.pm25 >= 30 else 0.25) * max(0.0, winter)
    pm25 = c.pm25 * boost * (1.0 + 0.22 * unit_jitter("pm25", c.name, key))
    pm10 = pm25 * (1.6 + 0.4 * unit_fraction("pm10", c.name, key))
    o3 = 30 + 50 * unit_fraction("o3", c.name, key) * (0.6 if winter > 0 else 1.0)
    no2 = 8 + 0.35 * pm25 + 15 * unit_fraction("no2", c.name, key)
    so2 = 2 + 0.08 * pm25 + 4 * unit_fraction("so2", c.name, key)
    co = 0.2 + 0.012 * pm25 + 0.3 * unit_fraction("co", c.name, key)
    aqi, category = _aqi(pm25)
    return {
        "city": c.name,
        "country": c.country,
        "measured_at": f"{key}T13:00:00{_tz(c)}",
        "aqi": aqi,
        "aqi_scale": "US EPA",
        "category": category,
        "dominant_pollutant": "pm2_5" if aqi > 50 or o3 < 70 else "o3",
        "pollutants": {
            "pm2_5": round(pm25, 1),
            "pm10": round(pm10, 1),
            "o3": round(o3, 1),
            "no2": round(no2, 1),
            "so2": round(so2, 1),
            "co": round(co, 2),
        },
        "pollutant_units": {"pm2_5": "µg/m³", "pm10": "µg/m³", "o3": "µg/m³", "no2": "µg/m³",
                            "so2": "µg/m³", "co": "mg/m³"},
        "health_advice": _ADVICE[category],
    }

package dev.forkpoint.chat;

import java.time.ZonedDateTime;
import java.time.format.TextStyle;
import java.util.Locale;

/** Python's {@code strftime} directives (C locale) for {@code strftime_now} in chat templates. */
final class Strftime {
    private Strftime() {}

    static String format(String format, ZonedDateTime t) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < format.length(); i++) {
            char c = format.charAt(i);
            if (c != '%' || i + 1 == format.length()) { out.append(c); continue; }
            char d = format.charAt(++i);
            switch (d) {
                case 'd' -> out.append(two(t.getDayOfMonth()));
                case '-' -> {  // glibc's %-d, %-m: no padding
                    if (i + 1 < format.length()) {
                        char e = format.charAt(++i);
                        out.append(switch (e) {
                            case 'd' -> String.valueOf(t.getDayOfMonth());
                            case 'm' -> String.valueOf(t.getMonthValue());
                            case 'H' -> String.valueOf(t.getHour());
                            case 'I' -> String.valueOf(hour12(t));
                            case 'M' -> String.valueOf(t.getMinute());
                            default -> "%-" + e;
                        });
                    }
                }
                case 'e' -> out.append(String.format("%2d", t.getDayOfMonth()));
                case 'm' -> out.append(two(t.getMonthValue()));
                case 'Y' -> out.append(t.getYear());
                case 'y' -> out.append(two(t.getYear() % 100));
                case 'b', 'h' -> out.append(t.getMonth().getDisplayName(TextStyle.SHORT, Locale.ENGLISH));
                case 'B' -> out.append(t.getMonth().getDisplayName(TextStyle.FULL, Locale.ENGLISH));
                case 'a' -> out.append(t.getDayOfWeek().getDisplayName(TextStyle.SHORT, Locale.ENGLISH));
                case 'A' -> out.append(t.getDayOfWeek().getDisplayName(TextStyle.FULL, Locale.ENGLISH));
                case 'H' -> out.append(two(t.getHour()));
                case 'I' -> out.append(two(hour12(t)));
                case 'p' -> out.append(t.getHour() < 12 ? "AM" : "PM");
                case 'M' -> out.append(two(t.getMinute()));
                case 'S' -> out.append(two(t.getSecond()));
                case 'j' -> out.append(String.format("%03d", t.getDayOfYear()));
                case 'F' -> out.append(t.getYear()).append('-').append(two(t.getMonthValue())).append('-').append(two(t.getDayOfMonth()));
                case 'T' -> out.append(two(t.getHour())).append(':').append(two(t.getMinute())).append(':').append(two(t.getSecond()));
                case '%' -> out.append('%');
                default -> out.append('%').append(d);
            }
        }
        return out.toString();
    }

    private static int hour12(ZonedDateTime t) {
        int h = t.getHour() % 12;
        return h == 0 ? 12 : h;
    }

    private static String two(int v) {
        return v < 10 ? "0" + v : String.valueOf(v);
    }
}
